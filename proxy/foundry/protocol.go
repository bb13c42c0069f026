package foundry

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its calls' log lines and label of their metrics.
const Name = "foundry"

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  foundry: {listen: ":8088", method: stream_query}
//
// listen defaults to ":8088", the runtime's fixed port; method is
// required.
var Protocol = core.Protocol[Options]{
	Kind: config.TargetKind(Name, ":8088", RouteInvocations, RouteReadiness),
	Options: func(door *config.Door, host core.Host) Options {
		t := door.Options.(*config.Target)
		return Options{Method: t.Method, Stream: t.Stream, Session: host.Getenv(EnvSessionID)}
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
	// Session is the value of $FOUNDRY_AGENT_SESSION_ID ("" when unset).
	Session string
}

// New is the door that serves opts.Method.
func New(_ *config.Config, opts Options) (*Door, error) {
	return &Door{method: opts.Method, stream: opts.Stream, session: opts.Session}, nil
}
