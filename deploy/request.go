package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// The Agent Platform create request (POST …/reasoningEngines, a
// ReasoningEngine resource) for a sidecar image. TestRequestMatchesProtos
// walks every body against the ReasoningEngine protos of
// google.cloud.aiplatform v1 and v1beta1 that the official
// @google-cloud/aiplatform npm package ships (field names, nesting, JSON
// types, enums); see docs/deploy.md for what is verified and
// what is assumed.

// Agent frameworks this package picks by itself. The platform knows more
// ("langchain", "langgraph", "ag2", "llama-index"); any can be given.
const (
	// FrameworkADK turns on the console's playground for ADK agents.
	FrameworkADK = "google-adk"
	// FrameworkCustom is every other agent.
	FrameworkCustom = "custom"
)

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
	// AgentCard is the A2A agent card (RequestOptions.A2ACard), as Google's
	// A2A template sets it; not in the npm protos yet (notInProtos).
	AgentCard json.RawMessage `json:"agentCard,omitempty"`
}

type containerSpec struct {
	ImageURI string `json:"imageUri"`
	// Port is where the platform sends the calls, when the sidecar's
	// listen port is not the platform's default (platformPort).
	Port *int `json:"port,omitempty"`
}

type deploymentSpec struct {
	Env                  []EnvVar          `json:"env,omitempty"`
	SecretEnv            []SecretEnvVar    `json:"secretEnv,omitempty"`
	MinInstances         *int              `json:"minInstances,omitempty"`
	MaxInstances         *int              `json:"maxInstances,omitempty"`
	ResourceLimits       map[string]string `json:"resourceLimits,omitempty"`
	ContainerConcurrency *int              `json:"containerConcurrency,omitempty"`
	PSCInterfaceConfig   *PSCInterface     `json:"pscInterfaceConfig,omitempty"`
	KeepAliveProbe       *keepAliveProbe   `json:"keepAliveProbe,omitempty"`
}

// keepAliveProbe is deploymentSpec.keepAliveProbe, from the map's
// keep_alive_probe: the platform asks httpGet.path and keeps a container
// that answers 2xx up, maxSeconds at most. Its port is the container's
// port (containerSpec.port), written with it.
type keepAliveProbe struct {
	HTTPGet    httpGetAction `json:"httpGet"`
	MaxSeconds int           `json:"maxSeconds"`
}

type httpGetAction struct {
	Path string `json:"path"`
	Port *int   `json:"port,omitempty"`
}

// platformPort is the container port the platform calls when the request
// names none (containerSpec.port's default).
const platformPort = 8080

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
	var agentCard json.RawMessage
	if len(opts.A2ACard) > 0 {
		card, a2a, err := a2aSpec(opts.A2ACard)
		if err != nil {
			bad("%v", err)
		}
		agentCard = card
		for _, m := range a2a {
			if seen[m.Name] {
				bad("method %s: declared by the map and as an A2A operation", m.Name)
			}
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
	// The sidecar listens on $PORT when it is set, else on listen: the
	// port the request names is listen's, so the two agree either way.
	var port *int
	if n, err := portOf(cfg.Listen); err != nil || n == 0 {
		bad("listen %q: the platform calls a fixed port (want e.g. \":8080\")", cfg.Listen)
	} else if n != platformPort {
		port = &n
	}
	errs = append(errs, checkExtras(opts)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	body := reasoningEngine{
		DisplayName: opts.DisplayName,
		Description: opts.Description,
		Spec: spec{
			ContainerSpec:  containerSpec{ImageURI: opts.Image, Port: port},
			ClassMethods:   methods,
			AgentFramework: framework,
			ServiceAccount: opts.ServiceAccount,
			IdentityType:   opts.IdentityType,
			AgentCard:      agentCard,
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
	if k := cfg.KeepAlive; k.Path != "" {
		d.KeepAliveProbe = &keepAliveProbe{HTTPGet: httpGetAction{Path: k.Path, Port: port}, MaxSeconds: k.MaxSeconds}
	}
	if len(d.Env) > 0 || len(d.SecretEnv) > 0 || d.MinInstances != nil || d.MaxInstances != nil ||
		d.ResourceLimits != nil || d.ContainerConcurrency != nil || d.PSCInterfaceConfig != nil || d.KeepAliveProbe != nil {
		body.Spec.DeploymentSpec = &d
	}
	b, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// portOf is the port of a listen address ("host:port").
func portOf(listen string) (int, error) {
	_, p, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}

// DefaultFramework is the agentFramework for cfg when none is given:
// "google-adk" for the ADK preset, any adk.* handler or any method that
// emits ADK events (emit: adk, so the console playground renders them),
// else "custom".
func DefaultFramework(cfg *config.Config) string {
	if cfg.Preset == config.PresetADK {
		return FrameworkADK
	}
	for _, m := range cfg.Methods {
		if strings.HasPrefix(m.Handler, "adk.") || m.Emitting() == config.EmitADK {
			return FrameworkADK
		}
	}
	return FrameworkCustom
}
