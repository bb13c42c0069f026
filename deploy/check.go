package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/config"
)

// The checks CreateRequest makes of the options: names, ranges, labels,
// keys and the API version; every problem is reported.

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

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
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
