package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/config"
)

// The Agent Platform create request (POST …/reasoningEngines, a
// ReasoningEngine resource) for a sidecar image. TestRequestMatchesProtos
// walks every body against the ReasoningEngine protos of
// google.cloud.aiplatform v1 and v1beta1 that the official
// @google-cloud/aiplatform npm package ships (field names, nesting, JSON
// types, enums); see the README's Deploy section for what is verified and
// what is assumed.

// Agent frameworks this package picks by itself. The platform knows more
// ("langchain", "langgraph", "ag2", "llama-index"); any can be given.
const (
	// FrameworkADK turns on the console's playground for ADK agents.
	FrameworkADK = "google-adk"
	// FrameworkCustom is every other agent.
	FrameworkCustom = "custom"
)

// DefaultSecretVersion is the Secret Manager version used when a secret
// env var names none (what gcloud does too).
const DefaultSecretVersion = "latest"

// RequestOptions are the parts of the deploy request the method map does
// not know. Zero values are left out of the request, so the platform's
// defaults apply (1 min instance, 100 max, 4 CPU / 4Gi, concurrency 9).
type RequestOptions struct {
	// DisplayName is the engine's displayName. Required.
	DisplayName string
	// Description is the engine's description. Optional.
	Description string
	// Image is spec.containerSpec.imageUri: the image whose entrypoint is
	// the sidecar (an Artifact Registry URI). Required.
	Image string
	// Framework is spec.agentFramework. Default: "google-adk" when the
	// method map uses the ADK preset or an adk.* handler, else "custom".
	Framework string
	// ServiceAccount is spec.serviceAccount, the identity the container
	// runs as. Default: the platform's service agent.
	ServiceAccount string
	// Methods are class methods declared besides the map's own: the names
	// a "*" method serves, which the map cannot list. Optional.
	Methods []ClassMethod
	// Env is spec.deploymentSpec.env, in this order.
	Env []EnvVar
	// SecretEnv is spec.deploymentSpec.secretEnv, in this order.
	SecretEnv []SecretEnvVar
	// MinInstances and MaxInstances bound the instance count; nil leaves
	// the platform default.
	MinInstances *int
	MaxInstances *int
	// CPU and Memory are spec.deploymentSpec.resourceLimits ("4", "4Gi").
	CPU    string
	Memory string
	// Concurrency is spec.deploymentSpec.containerConcurrency. Default:
	// the map's limits.concurrency when it sets one, else the platform's.
	Concurrency *int
	// Labels are the engine's labels. Optional.
	Labels map[string]string
	// KMSKey is encryptionSpec.kmsKeyName, a customer-managed key
	// (projects/P/locations/L/keyRings/R/cryptoKeys/K). Default: a
	// Google-managed key.
	KMSKey string
	// IdentityType is spec.identityType: "SERVICE_ACCOUNT" or
	// "AGENT_IDENTITY". Default: the service account, if any.
	IdentityType string
	// PSC is spec.deploymentSpec.pscInterfaceConfig, for an agent that
	// reaches a VPC through Private Service Connect. Optional.
	PSC *PSCInterface
	// ContextSpec is contextSpec, a JSON object (how sub-resources such as
	// the memory bank manage context). It exists in v1beta1 only.
	ContextSpec json.RawMessage
	// APIVersion is the API the request is sent to: "v1" (default) or
	// "v1beta1".
	APIVersion string
}

// PSCInterface is deploymentSpec.pscInterfaceConfig.
type PSCInterface struct {
	// NetworkAttachment is a Compute Engine network attachment, by name
	// or resource name, in the engine's region.
	NetworkAttachment string `json:"networkAttachment,omitempty"`
	// DNSPeering are DNS zones of a VPC the agent resolves names in.
	DNSPeering []DNSPeering `json:"dnsPeeringConfigs,omitempty"`
}

// DNSPeering is one dnsPeeringConfigs entry.
type DNSPeering struct {
	Domain        string `json:"domain"` // a DNS suffix ending in "."
	TargetProject string `json:"targetProject"`
	TargetNetwork string `json:"targetNetwork"`
}

// EnvVar is one entry of deploymentSpec.env.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SecretEnvVar is one entry of deploymentSpec.secretEnv: an environment
// variable whose value is a Secret Manager secret version.
type SecretEnvVar struct {
	Name      string    `json:"name"`
	SecretRef SecretRef `json:"secretRef"`
}

// SecretRef names a secret of the engine's project and its version.
type SecretRef struct {
	Secret  string `json:"secret"`
	Version string `json:"version"`
}

// The request body. Only fields this package sets; every one of them is a
// ReasoningEngine field in v1 (contextSpec: v1beta1), which
// TestRequestMatchesProtos checks against the API's protos.
type reasoningEngine struct {
	DisplayName    string            `json:"displayName"`
	Description    string            `json:"description,omitempty"`
	Spec           spec              `json:"spec"`
	Labels         map[string]string `json:"labels,omitempty"`
	EncryptionSpec *encryptionSpec   `json:"encryptionSpec,omitempty"`
	ContextSpec    json.RawMessage   `json:"contextSpec,omitempty"`
}

type encryptionSpec struct {
	KMSKeyName string `json:"kmsKeyName"`
}

type spec struct {
	ContainerSpec  containerSpec   `json:"containerSpec"`
	ClassMethods   []ClassMethod   `json:"classMethods"`
	AgentFramework string          `json:"agentFramework"`
	ServiceAccount string          `json:"serviceAccount,omitempty"`
	IdentityType   string          `json:"identityType,omitempty"`
	DeploymentSpec *deploymentSpec `json:"deploymentSpec,omitempty"`
}

type containerSpec struct {
	ImageURI string `json:"imageUri"`
}

type deploymentSpec struct {
	Env                  []EnvVar          `json:"env,omitempty"`
	SecretEnv            []SecretEnvVar    `json:"secretEnv,omitempty"`
	MinInstances         *int              `json:"minInstances,omitempty"`
	MaxInstances         *int              `json:"maxInstances,omitempty"`
	ResourceLimits       map[string]string `json:"resourceLimits,omitempty"`
	ContainerConcurrency *int              `json:"containerConcurrency,omitempty"`
	PSCInterfaceConfig   *PSCInterface     `json:"pscInterfaceConfig,omitempty"`
}

// ReservedEnv are names the request must not set, each with why: the
// platform injects them, or the sidecar's own contract needs them.
var ReservedEnv = map[string]string{
	"PORT":                               "the platform sets it for the sidecar's listener",
	"GOOGLE_CLOUD_PROJECT":               "reserved: the platform sets it",
	"GOOGLE_CLOUD_AGENT_ENGINE_ID":       "the platform sets it to the engine's id",
	"GOOGLE_CLOUD_AGENT_ENGINE_LOCATION": "the platform sets it to the engine's region",
	"GOOGLE_APPLICATION_CREDENTIALS":     "reserved: the engine uses its own service identity",
}

var (
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	methodRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	frameworkRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	secretRE     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	versionRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)
	kmsKeyRE     = regexp.MustCompile(`^projects/[^/\s]+/locations/[^/\s]+/keyRings/[^/\s]+/cryptoKeys/[^/\s]+$`)
	attachmentRE = regexp.MustCompile(`^(projects/[^/\s]+/regions/[^/\s]+/networkAttachments/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	domainRE     = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\.)+$`)
	gcpNameRE    = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	projectRE    = regexp.MustCompile(`^[a-z][-a-z0-9.:]{0,62}$`)
)

// The documented ranges of deploymentSpec's instance counts (the proto's
// comments): minInstances [0, 10], maxInstances [1, 1000], or [1, 100]
// with PSC-I (or VPC-SC, which the request cannot see).
const (
	maxMinInstances    = 10
	maxMaxInstances    = 1000
	maxMaxInstancesPSC = 100
	maxLabels          = 64
)

// IdentityTypes are spec.identityType's values besides the unspecified one.
var IdentityTypes = []string{"SERVICE_ACCOUNT", "AGENT_IDENTITY"}

// CreateRequest is the JSON body of the reasoningEngines create request
// (and of the patch request: the same resource) for an image that runs
// the sidecar with cfg: displayName, spec.containerSpec.imageUri,
// spec.classMethods (ClassMethods(cfg) plus opts.Methods, each with its
// "api_mode"), spec.agentFramework and spec.deploymentSpec. Every problem
// in opts is reported at once. The body is indented JSON ending in a
// newline; it depends only on cfg and opts (no paths, no clock).
func CreateRequest(cfg *config.Config, opts RequestOptions) ([]byte, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if strings.TrimSpace(opts.DisplayName) == "" {
		bad("display name: required")
	} else if hasControl(opts.DisplayName) {
		bad("display name %q: control characters are not allowed", opts.DisplayName)
	}
	if opts.Image == "" {
		bad("image: required (the image URI whose entrypoint is the sidecar)")
	} else if strings.ContainsAny(opts.Image, " \t\r\n") || !strings.Contains(opts.Image, "/") {
		bad("image %q: not an image URI (want REGION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG)", opts.Image)
	}

	framework := opts.Framework
	if framework == "" {
		framework = DefaultFramework(cfg)
	} else if !frameworkRE.MatchString(framework) {
		bad("framework %q: want a name such as %q or %q", framework, FrameworkADK, FrameworkCustom)
	}

	methods := ClassMethods(cfg)
	seen := map[string]bool{}
	for _, m := range methods {
		seen[m.Name] = true
	}
	for _, m := range opts.Methods {
		switch {
		case !ValidMethodName(m.Name):
			bad("method %q: not a method name", m.Name)
		case !ValidMode(m.APIMode):
			bad("method %s: unknown api_mode %q (want \"\", \"async\", \"stream\" or \"async_stream\")", m.Name, m.APIMode)
		case seen[m.Name]:
			bad("method %s: declared twice", m.Name)
		default:
			seen[m.Name] = true
			methods = append(methods, m)
		}
	}
	if len(methods) == 0 {
		bad("no class methods: the map lists none (a \"*\" method cannot be listed); declare the names it serves with --method NAME[:MODE]")
	}

	names := map[string]string{}
	checkName := func(kind, name string) {
		switch {
		case !envNameRE.MatchString(name):
			bad("%s %q: not an environment variable name", kind, name)
		case ReservedEnv[name] != "":
			bad("%s %s: %s", kind, name, ReservedEnv[name])
		case names[name] != "":
			bad("%s %s: already set as %s", kind, name, names[name])
		default:
			names[name] = kind
		}
	}
	for _, e := range opts.Env {
		checkName("env", e.Name)
	}
	secretEnv := make([]SecretEnvVar, 0, len(opts.SecretEnv))
	for _, s := range opts.SecretEnv {
		checkName("secret env", s.Name)
		if !secretRE.MatchString(s.SecretRef.Secret) {
			bad("secret env %s: secret %q is not a Secret Manager secret id", s.Name, s.SecretRef.Secret)
		}
		if s.SecretRef.Version == "" {
			s.SecretRef.Version = DefaultSecretVersion
		} else if !versionRE.MatchString(s.SecretRef.Version) {
			bad("secret env %s: version %q is not a version number, alias or \"latest\"", s.Name, s.SecretRef.Version)
		}
		secretEnv = append(secretEnv, s)
	}

	if opts.MinInstances != nil && (*opts.MinInstances < 0 || *opts.MinInstances > maxMinInstances) {
		bad("min instances %d: must be 0 to %d", *opts.MinInstances, maxMinInstances)
	}
	maxMax, maxNote := maxMaxInstances, ""
	if opts.PSC != nil {
		maxMax, maxNote = maxMaxInstancesPSC, " with a PSC interface"
	}
	if n := opts.MaxInstances; n != nil && (*n < 1 || *n > maxMax) {
		bad("max instances %d: must be 1 to %d%s", *n, maxMax, maxNote)
	}
	if opts.MinInstances != nil && opts.MaxInstances != nil && *opts.MinInstances > *opts.MaxInstances {
		bad("min instances %d is above max instances %d", *opts.MinInstances, *opts.MaxInstances)
	}
	concurrency := opts.Concurrency
	if concurrency == nil && cfg.Limits.Concurrency > 0 {
		c := cfg.Limits.Concurrency
		concurrency = &c
	}
	if concurrency != nil && (*concurrency < 1 || *concurrency > math.MaxInt32) {
		bad("concurrency %d: must be 1 to %d (an int32)", *concurrency, math.MaxInt32)
	}
	limits := map[string]string{}
	if opts.CPU != "" {
		limits["cpu"] = opts.CPU
	}
	if opts.Memory != "" {
		limits["memory"] = opts.Memory
	}
	for k, v := range limits {
		if strings.ContainsAny(v, " \t\r\n") {
			bad("%s %q: not a resource quantity", k, v)
		}
	}
	errs = append(errs, checkExtras(opts)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	body := reasoningEngine{
		DisplayName: opts.DisplayName,
		Description: opts.Description,
		Spec: spec{
			ContainerSpec:  containerSpec{ImageURI: opts.Image},
			ClassMethods:   methods,
			AgentFramework: framework,
			ServiceAccount: opts.ServiceAccount,
			IdentityType:   opts.IdentityType,
		},
		Labels:      opts.Labels,
		ContextSpec: opts.ContextSpec,
	}
	if opts.KMSKey != "" {
		body.EncryptionSpec = &encryptionSpec{KMSKeyName: opts.KMSKey}
	}
	d := deploymentSpec{
		Env:                  opts.Env,
		SecretEnv:            secretEnv,
		MinInstances:         opts.MinInstances,
		MaxInstances:         opts.MaxInstances,
		ContainerConcurrency: concurrency,
		PSCInterfaceConfig:   opts.PSC,
	}
	if len(limits) > 0 {
		d.ResourceLimits = limits
	}
	if len(d.Env) > 0 || len(d.SecretEnv) > 0 || d.MinInstances != nil || d.MaxInstances != nil ||
		d.ResourceLimits != nil || d.ContainerConcurrency != nil || d.PSCInterfaceConfig != nil {
		body.Spec.DeploymentSpec = &d
	}
	b, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// checkExtras checks the options beyond the container and its methods:
// labels, the key, the identity, the PSC interface, the API version and
// the context spec.
func checkExtras(opts RequestOptions) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(opts.Labels) > maxLabels {
		bad("labels: %d, at most %d", len(opts.Labels), maxLabels)
	}
	keys := make([]string, 0, len(opts.Labels))
	for k := range opts.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !labelKey(k) {
			bad("label %q: a key is a lowercase letter, then up to 62 lowercase letters, digits, \"_\" or \"-\"", k)
		} else if v := opts.Labels[k]; !labelValue(v) {
			bad("label %s=%q: a value is up to 63 lowercase letters, digits, \"_\" or \"-\"", k, v)
		}
	}
	if opts.KMSKey != "" && !kmsKeyRE.MatchString(opts.KMSKey) {
		bad("kms key %q: want projects/P/locations/L/keyRings/R/cryptoKeys/K", opts.KMSKey)
	}
	if opts.IdentityType != "" && !slices.Contains(IdentityTypes, opts.IdentityType) {
		bad("identity type %q: want %s", opts.IdentityType, strings.Join(IdentityTypes, " or "))
	}
	if p := opts.PSC; p != nil {
		if p.NetworkAttachment == "" {
			bad("psc interface: a network attachment is required (--network-attachment)")
		} else if !attachmentRE.MatchString(p.NetworkAttachment) {
			bad("network attachment %q: want a name or projects/P/regions/R/networkAttachments/N", p.NetworkAttachment)
		}
		for _, d := range p.DNSPeering {
			if !domainRE.MatchString(d.Domain) || !gcpNameRE.MatchString(d.TargetNetwork) || !projectRE.MatchString(d.TargetProject) {
				bad("dns peering %s=%s/%s: want DOMAIN.=PROJECT/NETWORK (the domain ends in a dot)", d.Domain, d.TargetProject, d.TargetNetwork)
			}
		}
	}
	switch opts.APIVersion {
	case "", "v1", "v1beta1":
	default:
		bad("api version %q: want v1 or v1beta1", opts.APIVersion)
	}
	if len(opts.ContextSpec) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(opts.ContextSpec, &obj); err != nil || obj == nil {
			bad("context spec: not a JSON object")
		}
		if opts.APIVersion != "v1beta1" {
			bad("context spec: contextSpec exists in the v1beta1 API only (--api-version v1beta1, API_VERSION=v1beta1 for deploy.sh)")
		}
	}
	return errs
}

// DefaultFramework is the agentFramework for cfg when none is given:
// "google-adk" for the ADK preset or any adk.* handler, else "custom".
func DefaultFramework(cfg *config.Config) string {
	if cfg.Preset == config.PresetADK {
		return FrameworkADK
	}
	for _, m := range cfg.Methods {
		if strings.HasPrefix(m.Handler, "adk.") {
			return FrameworkADK
		}
	}
	return FrameworkCustom
}

// Platform values the request is checked against by Warnings. They are the
// documented ones; the platform may accept more over time, so a value
// outside them is a warning, not an error.
var (
	documentedCPU = []string{"1", "2", "4", "6", "8"}
	memoryRE      = regexp.MustCompile(`^([1-9][0-9]?)Gi$`)
)

// platformConcurrency is containerConcurrency when the request sets none.
const platformConcurrency = 9

// killGraceSeconds is how long a container has between SIGTERM and SIGKILL
// on Cloud Run, which the platform's runtime is assumed to match.
const killGraceSeconds = 10

// Warnings are advice about a request that CreateRequest accepts: values
// outside the documented ones, and settings of cfg that do not fit the
// platform. Each is one sentence.
func Warnings(cfg *config.Config, opts RequestOptions) []string {
	var w []string
	if opts.Image != "" && !strings.Contains(strings.SplitN(opts.Image, "/", 2)[0], "-docker.pkg.dev") {
		w = append(w, fmt.Sprintf("image %q is not in Artifact Registry (REGION-docker.pkg.dev/…), which is what the platform documents", opts.Image))
	}
	if opts.CPU != "" && !slices.Contains(documentedCPU, opts.CPU) {
		w = append(w, fmt.Sprintf("cpu %q: the documented values are %s", opts.CPU, strings.Join(documentedCPU, ", ")))
	}
	if opts.Memory != "" {
		if m := memoryRE.FindStringSubmatch(opts.Memory); m == nil || atoi(m[1]) > 32 {
			w = append(w, fmt.Sprintf("memory %q: the documented values are 1Gi … 32Gi", opts.Memory))
		}
	}
	for _, m := range cfg.Methods {
		if m.Name == "*" && len(opts.Methods) == 0 {
			w = append(w, "the map has a \"*\" method: the names it serves are not declared, so the platform's SDK will not offer them (add --method NAME[:MODE])")
		}
	}
	conc := platformConcurrency
	if opts.Concurrency != nil {
		conc = *opts.Concurrency
	}
	if cfg.Limits.Concurrency > 0 && conc > cfg.Limits.Concurrency {
		w = append(w, fmt.Sprintf("containerConcurrency %d is above limits.concurrency %d: the extra calls wait in the sidecar's queue", conc, cfg.Limits.Concurrency))
	}
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && (host == "127.0.0.1" || host == "localhost" || host == "::1") {
		w = append(w, fmt.Sprintf("listen %q is loopback: the platform reaches the sidecar only through $PORT", cfg.Listen))
	}
	if total := cfg.Shutdown.Drain + cfg.Shutdown.AgentGrace; total.Seconds() >= killGraceSeconds {
		w = append(w, fmt.Sprintf("shutdown.drain + shutdown.agent_grace = %s: a container gets %ds between SIGTERM and SIGKILL", total, killGraceSeconds))
	}
	return w
}

// UpdateMask is the updateMask query parameter of the patch request that
// applies body (a CreateRequest result) to an existing engine: every field
// the body sets, as snake_case FieldMask paths, sorted. The env and
// secretEnv lists and the labels are always in it, so variables and labels
// dropped from the request are removed from the engine: the request is the
// whole deployment.
func UpdateMask(body []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", fmt.Errorf("update mask: %w", err)
	}
	paths := map[string]bool{
		"labels":                          true,
		"spec.deployment_spec.env":        true,
		"spec.deployment_spec.secret_env": true,
	}
	for k, v := range top {
		if k != "spec" {
			paths[snake(k)] = true
			continue
		}
		var sp map[string]json.RawMessage
		if err := json.Unmarshal(v, &sp); err != nil {
			return "", fmt.Errorf("update mask: spec: %w", err)
		}
		for sk, sv := range sp {
			if sk != "deploymentSpec" {
				paths["spec."+snake(sk)] = true
				continue
			}
			var dp map[string]json.RawMessage
			if err := json.Unmarshal(sv, &dp); err != nil {
				return "", fmt.Errorf("update mask: spec.deploymentSpec: %w", err)
			}
			for dk := range dp {
				paths["spec.deployment_spec."+snake(dk)] = true
			}
		}
	}
	out := make([]string, 0, len(paths))
	for p := range paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return strings.Join(out, ","), nil
}

// ValidMethodName reports whether name can be a class method's name: a
// Python identifier of ASCII letters, digits and "_".
func ValidMethodName(name string) bool { return methodRE.MatchString(name) }

// ValidMode reports whether m is one of the platform's four api_mode values.
func ValidMode(m config.Mode) bool {
	switch m {
	case config.ModeSync, config.ModeAsync, config.ModeStream, config.ModeAsyncStream:
		return true
	}
	return false
}

// snake turns a lowerCamelCase JSON name into its proto field name.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// labelKey and labelValue check Google Cloud labels: lowercase letters,
// digits, "_" and "-", keys starting with a letter, each at most 63
// characters. By hand, not as a regexp: the Unicode classes repeated 63
// times compiled to 8 MB at every start of the binary.
func labelKey(k string) bool {
	r, _ := utf8.DecodeRuneInString(k)
	return k != "" && labelLetter(r) && labelValue(k)
}

func labelValue(v string) bool {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > 63 {
		return false
	}
	for _, r := range v {
		if !labelLetter(r) && !unicode.IsNumber(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// labelLetter is a lowercase letter, or a letter of a script without case.
func labelLetter(r rune) bool { return unicode.In(r, unicode.Ll, unicode.Lo) }
