package agentcore

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its calls' log lines and label of their metrics.
const Name = "agentcore"

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  agentcore: {listen: ":8080", method: stream_query}
//
// listen defaults to ":8080", the runtime's fixed port; method is
// required.
var Protocol = core.Protocol[Options]{
	Kind: config.TargetKind(Name, ":8080", RouteInvocations, RoutePing),
	Options: func(door *config.Door, host core.Host) Options {
		t := door.Options.(*config.Target)
		return Options{Method: t.Method, Stream: t.Stream, InFlight: host.InFlight}
	},
	Probe:   probe,
	Example: example,
}

// Options are what the door serves.
type Options struct {
	// Method is the method of the map every call goes to; Stream whether
	// it is served as a stream.
	Method string
	Stream bool
	// InFlight is the number of calls the sidecar is serving on every
	// door (proxy.Server.InFlight): /ping says HealthyBusy while it is
	// above 0.
	InFlight func() int64
}

// New is the door that serves opts.Method.
func New(_ *config.Config, opts Options) (*Door, error) {
	return &Door{method: opts.Method, stream: opts.Stream, ping: newPinger(opts.InFlight)}, nil
}
