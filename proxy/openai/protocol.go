package openai

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its calls' log lines and label of their metrics.
const Name = "openai"

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  openai: {listen: ":8091", method: stream_query, model: price-agent, api_key: "${DOOR_KEY}"}
//
// listen defaults to ":8091"; method is required; model defaults to the
// method's name; api_key is optional (no key: every caller is let in).
var Protocol = core.Protocol[Options]{
	Kind: config.Kind{
		Name:   Name,
		Listen: ":8091",
		Decode: decodeSection,
		// Its /healthz stays the platform's at "/": it claims /v1/… only.
		Routes: func(*config.Door) []string { return []string{"/v1/"} },
		Check: func(d config.Decoder, c *config.Config, door *config.Door) {
			d.CheckTarget(c, door, &config.Target{Method: door.Options.(*section).Method})
		},
		Print: func(door *config.Door) *yaml.Node {
			s := door.Options.(*section)
			kv := []any{"model", config.Quoted(s.Model)}
			if s.APIKey != "" {
				// As written: a ${NAME} secret stays a reference.
				kv = append(kv, "api_key", config.Quoted(s.APIKey))
			}
			return config.PrintTarget(door, &config.Target{Method: s.Method}, kv...)
		},
	},
	Options: func(door *config.Door, host core.Host) Options {
		s := door.Options.(*section)
		o := Options{Method: s.Method, Model: s.Model}
		if s.APIKey != "" {
			o.APIKey, o.MissingEnv = expand(s.APIKey, host.Getenv)
			o.KeySet = true
		}
		return o
	},
	Probe:   probe,
	Example: example,
}

// Options are what the door serves.
type Options struct {
	// Method is the method of the map every call goes to.
	Method string
	// Model is the one model id the door lists and accepts. Default: the
	// method's name.
	Model string
	// APIKey is the key callers must send (Authorization: Bearer <key>),
	// ${NAME} references resolved; KeySet says the section set one. A key
	// set but empty once resolved (MissingEnv names the variables that
	// were unset) is an error of New, never an open door.
	APIKey     string
	KeySet     bool
	MissingEnv []string
}

// section is the door's protocols section as written.
type section struct {
	Method, Model string
	// APIKey is api_key as written, ${NAME} references unresolved.
	APIKey string
}

// envRef is a ${NAME} reference to the environment, as config's headers
// take them.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand resolves s's ${NAME} references with getenv; missing lists the
// names that were unset or empty.
func expand(s string, getenv func(string) string) (value string, missing []string) {
	value = envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v := ""
		if getenv != nil {
			v = getenv(name)
		}
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	return value, missing
}

// decodeSection decodes the section: listen, method, model and api_key.
func decodeSection(d config.Decoder, n *yaml.Node, path string, door *config.Door) bool {
	s := &section{}
	door.Options = s
	var t config.Target
	on := d.Target(n, path, door, &t,
		config.Field{Key: "model", Decode: func(d config.Decoder, e config.Entry, path string) {
			if v, ok := d.Scalar(e, path); ok {
				if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					d.Addf(e.Value.Line, path, "%q is not a model id (want a non-empty name without control characters, e.g. price-agent)", v)
					return
				}
				s.Model = v
			}
		}},
		config.Field{Key: "api_key", Decode: func(d config.Decoder, e config.Entry, path string) {
			if v, ok := d.Scalar(e, path); ok {
				// A key comes from the environment, never from the file:
				// validate --print and sidecar dev show the file.
				if !envRef.MatchString(v) || strings.Contains(envRef.ReplaceAllString(v, ""), "${") {
					d.Addf(e.Value.Line, path, "%q names no environment variable (want the secret's variable as \"${NAME}\", e.g. \"${DOOR_KEY}\": a key is never written in the file)", v)
					return
				}
				s.APIKey = v
			}
		}})
	s.Method = t.Method
	if s.Model == "" {
		s.Model = t.Method
	}
	return on
}
