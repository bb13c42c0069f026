package livedoor

import (
	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its conversations' log lines and label of their
// metrics.
const Name = "live"

// The framings a conversation on the door speaks (the section's framing).
const (
	// FramingPlatform is Agent Platform's bidi framing: a setup frame,
	// then {"bidi_stream_input": …} in and {"bidiStreamOutput": …} out.
	FramingPlatform = "platform"
	// FramingRaw relays frames unchanged, to the door's method.
	FramingRaw = "raw"
)

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  live: {mount: /live, method: talk}                 # framing: platform
//	  live: {listen: ":8082", method: talk, framing: raw}
//
// listen defaults to ":8082"; method, a bidi method of the map, is
// required: the conversation's method under the raw framing, and under
// the platform's when the setup frame names no class_method. framing is
// platform (the default) or raw.
var Protocol = core.Protocol[Options]{
	Kind: config.Kind{
		Name:   Name,
		Listen: ":8082",
		Routes: func(*config.Door) []string { return []string{Route} },
		Decode: decodeSection,
		Check: func(d config.Decoder, c *config.Config, door *config.Door) {
			s := door.Options.(*Section)
			if c.Bidi(s.Method) == nil {
				d.Addf(door.Line, "protocols."+door.Name+".method", "%q is not a bidi method of the map (want a method with mode: bidi, e.g. talk: {mode: bidi, call: GET /live})", s.Method)
			}
		},
		Print: func(door *config.Door) *yaml.Node {
			s := door.Options.(*Section)
			return config.PrintTarget(door, &s.Target, "framing", config.Quoted(s.Framing))
		},
	},
	Options: func(door *config.Door, _ core.Host) Options {
		s := door.Options.(*Section)
		return Options{Method: s.Method, Framing: s.Framing}
	},
	Probe: probe,
}

// Section is the door's protocols section: listen (or mount), method and
// framing.
type Section struct {
	config.Target
	Framing string
}

// decodeSection decodes the section into door.Options, a *Section.
func decodeSection(d config.Decoder, n *yaml.Node, path string, door *config.Door) bool {
	s := &Section{Framing: FramingPlatform}
	door.Options = s
	return d.Target(n, path, door, &s.Target, config.Field{Key: "framing", Decode: func(d config.Decoder, e config.Entry, path string) {
		v, ok := d.Scalar(e, path)
		if !ok {
			return
		}
		switch v {
		case FramingPlatform, FramingRaw:
			s.Framing = v
		default:
			d.Addf(e.Value.Line, path, "%q is not a framing (want platform, the platform's bidi framing, or raw)", v)
		}
	}})
}

// Options are what the door serves.
type Options struct {
	// Method is the bidi method a conversation goes to: always under the
	// raw framing, when the setup names none under the platform's.
	Method string
	// Framing is FramingPlatform or FramingRaw.
	Framing string
}

// New is the door that serves opts.
func New(_ *config.Config, opts Options) (*Door, error) {
	return &Door{method: opts.Method, raw: opts.Framing == FramingRaw}, nil
}
