package main

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
	"github.com/sidecar-dev/sidecar/deploy"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// The flags of `sidecar deploy-request`: register adds them to the
// command's flag set, write prints the request once the flags and the
// config are parsed. What the options mean and which are valid is
// package deploy's.

// requestFlags collect deploy.RequestOptions from the command line.
type requestFlags struct {
	opts deploy.RequestOptions
	// updateMask makes write print the patch request's updateMask instead
	// of the body.
	updateMask bool
	// a2a declares the A2A door as Google's A2A template does (--a2a),
	// its card advertising a2aURL when given (--a2a-url).
	a2a    bool
	a2aURL string
}

// requestUsage documents the flags register adds, for the command's help.
const requestUsage = `  --image URI              spec.containerSpec.imageUri (required)
  --display-name NAME      displayName (required)
  --description TEXT       description
  --framework NAME         spec.agentFramework (default google-adk with the ADK
                           preset, an adk.* handler or emit: adk, else custom)
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
  --a2a                    declare the mounted A2A door (protocols.a2a) as Google's
                           A2A template does: spec.agentCard and classMethods of
                           api_mode a2a_extension carrying the card (docs/a2a.md)
  --a2a-url URL            the URL that card advertises (default protocols.a2a.url,
                           else the local one sidecar a2a-card prints)
  --update-mask            print the patch request's updateMask instead of the body
`

// register adds the deploy-request flags to fs.
func (f *requestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.opts.Image, "image", "", "")
	fs.StringVar(&f.opts.DisplayName, "display-name", "", "")
	fs.StringVar(&f.opts.Description, "description", "", "")
	fs.StringVar(&f.opts.Framework, "framework", "", "")
	fs.StringVar(&f.opts.ServiceAccount, "service-account", "", "")
	fs.StringVar(&f.opts.CPU, "cpu", "", "")
	fs.StringVar(&f.opts.Memory, "memory", "", "")
	fs.BoolVar(&f.updateMask, "update-mask", false, "")
	fs.BoolVar(&f.a2a, "a2a", false, "")
	fs.StringVar(&f.a2aURL, "a2a-url", "", "")
	fs.Func("method", "", func(s string) error {
		m, err := parseMethod(s)
		f.opts.Methods = append(f.opts.Methods, m)
		return err
	})
	fs.Func("env", "", func(s string) error {
		e, err := parseEnv(s)
		f.opts.Env = append(f.opts.Env, e)
		return err
	})
	fs.Func("secret-env", "", func(s string) error {
		e, err := parseSecretEnv(s)
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
		d, err := parseDNSPeering(s)
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

func (f *requestFlags) psc() *deploy.PSCInterface {
	if f.opts.PSC == nil {
		f.opts.PSC = &deploy.PSCInterface{}
	}
	return f.opts.PSC
}

// parseDNSPeering reads "DOMAIN=PROJECT/NETWORK".
func parseDNSPeering(s string) (deploy.DNSPeering, error) {
	domain, target, ok1 := strings.Cut(s, "=")
	project, network, ok2 := strings.Cut(target, "/")
	if !ok1 || !ok2 || domain == "" || project == "" || network == "" {
		return deploy.DNSPeering{}, fmt.Errorf("%q: want DOMAIN=PROJECT/NETWORK", s)
	}
	return deploy.DNSPeering{Domain: domain, TargetProject: project, TargetNetwork: network}, nil
}

// parseEnv reads "NAME=VALUE" (the value may be empty and may hold "=").
func parseEnv(s string) (deploy.EnvVar, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return deploy.EnvVar{}, fmt.Errorf("%q: want NAME=VALUE", s)
	}
	return deploy.EnvVar{Name: name, Value: value}, nil
}

// parseSecretEnv reads "NAME=SECRET[:VERSION]"; the version defaults to
// "latest".
func parseSecretEnv(s string) (deploy.SecretEnvVar, error) {
	name, ref, ok := strings.Cut(s, "=")
	secret, version, _ := strings.Cut(ref, ":")
	if !ok || name == "" || secret == "" {
		return deploy.SecretEnvVar{}, fmt.Errorf("%q: want NAME=SECRET[:VERSION]", s)
	}
	if version == "" {
		version = deploy.DefaultSecretVersion
	}
	return deploy.SecretEnvVar{Name: name, SecretRef: deploy.SecretRef{Secret: secret, Version: version}}, nil
}

// parseMethod reads "NAME[:MODE]", MODE one of async, stream, async_stream
// (none: unary).
func parseMethod(s string) (deploy.ClassMethod, error) {
	name, mode, _ := strings.Cut(s, ":")
	if !deploy.ValidMethodName(name) {
		return deploy.ClassMethod{}, fmt.Errorf("%q: want NAME[:MODE]", s)
	}
	if !deploy.ValidMode(config.Mode(mode)) {
		return deploy.ClassMethod{}, fmt.Errorf("%q: unknown mode %q (want async, stream or async_stream, or none)", s, mode)
	}
	return deploy.ClassMethod{Name: name, APIMode: config.Mode(mode)}, nil
}

// write prints the create request for cfg to stdout (or, with
// --update-mask, its updateMask), and any Warnings to stderr. A request
// deploy.CreateRequest refuses is an error listing every problem, one a line,
// each prefixed "sidecar deploy-request: ".
func (f *requestFlags) write(cfg *config.Config, stdout, stderr io.Writer) error {
	opts := f.opts
	card, a2aWarnings, err := f.a2aCard(cfg)
	if err != nil {
		return errors.New(requestPrefix + err.Error())
	}
	opts.A2ACard = card
	body, err := deploy.CreateRequest(cfg, opts)
	if err != nil {
		return errors.New(requestPrefix + strings.ReplaceAll(err.Error(), "\n", "\n"+requestPrefix))
	}
	for _, w := range a2aWarnings {
		fmt.Fprintln(stderr, requestPrefix+"warning:", w)
	}
	for _, w := range deploy.Warnings(cfg, opts) {
		fmt.Fprintln(stderr, requestPrefix+"warning:", w)
	}
	if f.updateMask {
		mask, err := deploy.UpdateMask(body)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, mask)
		return err
	}
	_, err = stdout.Write(body)
	return err
}

const requestPrefix = "sidecar deploy-request: "

// a2aCard is the card --a2a declares and its advice: the A2A door's
// registration builds it (doors.DeployCard), advertising --a2a-url when
// given. Nil without --a2a.
func (f *requestFlags) a2aCard(cfg *config.Config) (json.RawMessage, []string, error) {
	if !f.a2a {
		if f.a2aURL != "" {
			return nil, nil, errors.New("--a2a-url: needs --a2a (the card it is the URL of)")
		}
		return nil, nil, nil
	}
	return doors.DeployCard(doors.All, cfg, f.a2aURL)
}

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
