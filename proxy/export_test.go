package proxy

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// ToyProtocol is the toy door's registration, as a door's package declares
// it (proxy/doors lists the program's): protocols.toy is listen (default
// ":9100") and method, decoded and checked as every Target door's.
var ToyProtocol = core.Protocol[ToyOptions]{
	Kind: config.TargetKind("toy", ":9100"),
	Options: func(door *config.Door, _ core.Host) ToyOptions {
		return ToyOptions{Method: door.Options.(*config.Target).Method}
	},
}

// ToyOptions are what the toy door serves: its method is named in each
// request, so Method only shows the section reached the constructor.
type ToyOptions struct{ Method string }

// NewToyDoor is the toy door, in the one constructor shape of every door.
func NewToyDoor(_ *config.Config, opts ToyOptions) (*ToyDoor, error) {
	return &ToyDoor{Method: opts.Method}, nil
}

// ToyDoor is toyDoor named for its registration: Protocol is "toy".
type ToyDoor struct {
	toyDoor
	Method string
}

func (*ToyDoor) Protocol() string { return ToyProtocol.Name }
