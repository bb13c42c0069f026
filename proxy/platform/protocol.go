package platform

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Name is the door's protocol: its key in the protocols section
// (config.ProtocolAgentPlatform, the one config decodes itself), the
// protocol field of its calls' log lines and label of their metrics.
const Name = config.ProtocolAgentPlatform

// Protocol is the door's registration (proxy/doors lists it). Its
// section, agent_platform: {enabled: false}, is config's own, and its
// address the top-level listen (or --listen, $PORT), so its Kind has
// only its name.
var Protocol = core.Protocol[Options]{
	Kind:    config.Kind{Name: Name},
	Options: func(*config.Door, core.Host) Options { return Options{} },
	Probe:   probe,
	Example: example,
}

// Options are what the door serves: nothing besides the method map.
type Options struct{}

// New is the Agent Platform door, the zero Door.
func New(*config.Config, Options) (*Door, error) { return &Door{}, nil }
