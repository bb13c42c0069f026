package deploy

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// RequestFlags are the flags of `sidecar deploy-request`: Register adds
// them to the command's flag set, Write prints the request once the flags
// and the config are parsed.
type RequestFlags struct {
	opts RequestOptions
	// UpdateMask makes Write print the patch request's updateMask instead
	// of the body.
	UpdateMask bool
}

// RequestUsage documents the flags Register adds, for the command's help.
const RequestUsage = `  --image URI              spec.containerSpec.imageUri (required)
  --display-name NAME      displayName (required)
  --description TEXT       description
  --framework NAME         spec.agentFramework (default google-adk with the ADK
                           preset or an adk.* handler, else custom)
  --service-account EMAIL  spec.serviceAccount
  --method NAME[:MODE]     declare a class method the map cannot list (one a "*"
                           method serves); MODE async, stream or async_stream
  --env NAME=VALUE         deploymentSpec.env entry (repeatable)
  --secret-env NAME=SECRET[:VERSION]
                           deploymentSpec.secretEnv entry, version default latest
                           (repeatable)
  --min-instances N        deploymentSpec.minInstances (0 to 10)
  --max-instances N        deploymentSpec.maxInstances (1 to 1000; 100 with PSC)
  --cpu N                  deploymentSpec.resourceLimits.cpu (1, 2, 4, 6 or 8)
  --memory SIZE            deploymentSpec.resourceLimits.memory (1Gi … 32Gi)
  --concurrency N          deploymentSpec.containerConcurrency (default the map's
                           limits.concurrency when set, else the platform's 9)
  --label KEY=VALUE        labels entry (repeatable)
  --kms-key NAME           encryptionSpec.kmsKeyName, a customer-managed key:
                           projects/P/locations/L/keyRings/R/cryptoKeys/K
  --identity-type TYPE     spec.identityType: SERVICE_ACCOUNT or AGENT_IDENTITY
  --network-attachment NAME
                           deploymentSpec.pscInterfaceConfig.networkAttachment
                           (Private Service Connect to a VPC)
  --dns-peering DOMAIN=PROJECT/NETWORK
                           pscInterfaceConfig.dnsPeeringConfigs entry; DOMAIN
                           ends in a dot (repeatable)
  --context-spec JSON|@FILE
                           contextSpec (memory bank settings), a JSON object;
                           needs --api-version v1beta1
  --api-version VERSION    the API the request is for: v1 (default) or v1beta1
                           (deploy.sh passes its API_VERSION)
  --update-mask            print the patch request's updateMask instead of the body
`

// Register adds the deploy-request flags to fs.
func (f *RequestFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.opts.Image, "image", "", "")
	fs.StringVar(&f.opts.DisplayName, "display-name", "", "")
	fs.StringVar(&f.opts.Description, "description", "", "")
	fs.StringVar(&f.opts.Framework, "framework", "", "")
	fs.StringVar(&f.opts.ServiceAccount, "service-account", "", "")
	fs.StringVar(&f.opts.CPU, "cpu", "", "")
	fs.StringVar(&f.opts.Memory, "memory", "", "")
	fs.BoolVar(&f.UpdateMask, "update-mask", false, "")
	fs.Func("method", "", func(s string) error {
		m, err := ParseMethod(s)
		f.opts.Methods = append(f.opts.Methods, m)
		return err
	})
	fs.Func("env", "", func(s string) error {
		e, err := ParseEnv(s)
		f.opts.Env = append(f.opts.Env, e)
		return err
	})
	fs.Func("secret-env", "", func(s string) error {
		e, err := ParseSecretEnv(s)
		f.opts.SecretEnv = append(f.opts.SecretEnv, e)
		return err
	})
	fs.StringVar(&f.opts.KMSKey, "kms-key", "", "")
	fs.StringVar(&f.opts.IdentityType, "identity-type", "", "")
	fs.StringVar(&f.opts.APIVersion, "api-version", "", "")
	fs.Func("label", "", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want KEY=VALUE", s)
		}
		if _, dup := f.opts.Labels[k]; dup {
			return fmt.Errorf("%q: label %s given twice", s, k)
		}
		if f.opts.Labels == nil {
			f.opts.Labels = map[string]string{}
		}
		f.opts.Labels[k] = v
		return nil
	})
	fs.Func("network-attachment", "", func(s string) error {
		f.psc().NetworkAttachment = s
		return nil
	})
	fs.Func("dns-peering", "", func(s string) error {
		d, err := ParseDNSPeering(s)
		f.psc().DNSPeering = append(f.psc().DNSPeering, d)
		return err
	})
	fs.Func("context-spec", "", func(s string) error {
		b := []byte(s)
		if name, ok := strings.CutPrefix(s, "@"); ok {
			var err error
			if b, err = os.ReadFile(name); err != nil {
				return err
			}
		}
		if !json.Valid(b) {
			return fmt.Errorf("%.40q: not JSON", s)
		}
		f.opts.ContextSpec = json.RawMessage(b)
		return nil
	})
	fs.Func("min-instances", "", intFlag(&f.opts.MinInstances))
	fs.Func("max-instances", "", intFlag(&f.opts.MaxInstances))
	fs.Func("concurrency", "", intFlag(&f.opts.Concurrency))
}

func (f *RequestFlags) psc() *PSCInterface {
	if f.opts.PSC == nil {
		f.opts.PSC = &PSCInterface{}
	}
	return f.opts.PSC
}

// ParseDNSPeering reads "DOMAIN=PROJECT/NETWORK".
func ParseDNSPeering(s string) (DNSPeering, error) {
	domain, target, ok1 := strings.Cut(s, "=")
	project, network, ok2 := strings.Cut(target, "/")
	if !ok1 || !ok2 || domain == "" || project == "" || network == "" {
		return DNSPeering{}, fmt.Errorf("%q: want DOMAIN=PROJECT/NETWORK", s)
	}
	return DNSPeering{Domain: domain, TargetProject: project, TargetNetwork: network}, nil
}

// Options are the request options the parsed flags give.
func (f *RequestFlags) Options() RequestOptions { return f.opts }

// Write prints the create request for cfg to stdout (or, with
// --update-mask, its updateMask), and any Warnings to stderr. A request
// CreateRequest refuses is an error listing every problem, one a line,
// each prefixed "sidecar deploy-request: ".
func (f *RequestFlags) Write(cfg *config.Config, stdout, stderr io.Writer) error {
	body, err := CreateRequest(cfg, f.opts)
	if err != nil {
		return errors.New(prefix + strings.ReplaceAll(err.Error(), "\n", "\n"+prefix))
	}
	for _, w := range Warnings(cfg, f.opts) {
		fmt.Fprintln(stderr, prefix+"warning:", w)
	}
	if f.UpdateMask {
		mask, err := UpdateMask(body)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, mask)
		return err
	}
	_, err = stdout.Write(body)
	return err
}

const prefix = "sidecar deploy-request: "

func intFlag(p **int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q: want a whole number", s)
		}
		*p = &n
		return nil
	}
}
