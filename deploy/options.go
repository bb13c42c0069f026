package deploy

import "encoding/json"

// The options of the deploy request that the method map does not know.

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
	// A2ACard is the A2A door's agent card (a JSON object, what `sidecar
	// a2a-card` prints). With it the request declares what Google's A2A
	// template does: spec.agentCard, and classMethods of api_mode
	// "a2a_extension", each carrying the card. Optional.
	A2ACard json.RawMessage
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
