package agentcore

import (
	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its calls' log lines and label of their metrics.
const Name = "agentcore"

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  agentcore: {listen: ":8080", method: stream_query, ws: converse}
//
// listen defaults to ":8080", the runtime's fixed port; method is
// required; ws, a bidi method of the map, is what GET /ws converses with
// (none: /ws is not served).
var Protocol = core.Protocol[Options]{
	Kind: config.Kind{
		Name:   Name,
		Listen: ":8080",
		Routes: func(door *config.Door) []string {
			if door.Options.(*Section).WS != "" {
				return []string{RouteInvocations, RoutePing, RouteWS}
			}
			return []string{RouteInvocations, RoutePing}
		},
		Decode: decodeSection,
		Check: func(d config.Decoder, c *config.Config, door *config.Door) {
			s := door.Options.(*Section)
			d.CheckTarget(c, door, &s.Target)
			if s.WS != "" && c.Bidi(s.WS) == nil {
				d.Addf(s.wsLine, "protocols."+door.Name+".ws", "%q is not a bidi method of the map (want a method with mode: bidi)", s.WS)
			}
		},
		Print: func(door *config.Door) *yaml.Node {
			s := door.Options.(*Section)
			if s.WS == "" {
				return config.PrintTarget(door, &s.Target)
			}
			return config.PrintTarget(door, &s.Target, "ws", config.Quoted(s.WS))
		},
	},
	Options: func(door *config.Door, host core.Host) Options {
		s := door.Options.(*Section)
		return Options{Method: s.Method, Stream: s.Stream, WS: s.WS, InFlight: host.InFlight}
	},
	Probe:   probe,
	Example: example,
	Live: func(_ *config.Config, door *config.Door) []core.Conversation {
		if s := door.Options.(*Section); s.WS != "" {
			return []core.Conversation{{Path: RouteWS, Methods: []string{s.WS}}}
		}
		return nil
	},
}

// Section is the door's protocols section: listen and method, and ws.
type Section struct {
	config.Target
	WS     string
	wsLine int
}

// decodeSection decodes the section into door.Options, a *Section.
func decodeSection(d config.Decoder, n *yaml.Node, path string, door *config.Door) bool {
	s := &Section{}
	door.Options = s
	return d.Target(n, path, door, &s.Target, config.Field{Key: "ws", Decode: func(d config.Decoder, e config.Entry, path string) {
		if v, ok := d.Scalar(e, path); ok {
			s.WS, s.wsLine = v, e.Value.Line
		}
	}})
}

// Options are what the door serves.
type Options struct {
	// Method is the method of the map every call goes to; Stream whether
	// it is served as a stream.
	Method string
	Stream bool
	// WS is the bidi method GET /ws converses with; "": /ws is not
	// served.
	WS string
	// InFlight is the number of calls the sidecar is serving on every
	// door (proxy.Server.InFlight): /ping says HealthyBusy while it is
	// above 0.
	InFlight func() int64
}

// New is the door that serves opts.Method.
func New(_ *config.Config, opts Options) (*Door, error) {
	return &Door{method: opts.Method, stream: opts.Stream, ws: opts.WS, ping: newPinger(opts.InFlight)}, nil
}
