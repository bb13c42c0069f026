package platform

import (
	"errors"

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
	Options: func(_ *config.Door, h core.Host) Options { return Options{InFlight: h.InFlight} },
	Probe:   probe,
	Example: example,
}

// Options are what the door serves besides the method map.
type Options struct {
	// InFlight is the number of calls being served on every door
	// (proxy.Server.InFlight): the keep-alive probe answers 2xx while it
	// is above 0.
	InFlight func() int64
}

// New is the Agent Platform door: the contract, and cfg's keep-alive
// probe (keep_alive_probe) when it has one; its 404s name the doors cfg
// mounts on its listener.
func New(cfg *config.Config, opts Options) (*Door, error) {
	d := &Door{mounted: mountedDoors(cfg)}
	if cfg.KeepAlive.Path != "" {
		if opts.InFlight == nil {
			return nil, errors.New("keep_alive_probe: no count of the calls in flight to answer it with")
		}
		d.keepAlivePath, d.keepAlive = cfg.KeepAlive.Path, keepAlive{inFlight: opts.InFlight}
	}
	return d, nil
}
