package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// ToyProtocol is the toy door's registration, as a door's package declares
// it (proxy/doors lists the program's): protocols.toy is listen (default
// ":9100") and method, decoded and checked as every Target door's; its
// Probe is how a client calls it and reads its failures, as every door
// declares it for the shared hostile-input tests.
var ToyProtocol = core.Protocol[ToyOptions]{
	Kind: config.TargetKind("toy", ":9100"),
	Options: func(door *config.Door, _ core.Host) ToyOptions {
		return ToyOptions{Method: door.Options.(*config.Target).Method}
	},
	Probe: core.Probe{
		Section: core.TargetSection,
		Request: func(base, method string, stream bool) *http.Request {
			route := "/ask"
			if stream {
				route = "/watch"
			}
			r, _ := http.NewRequest(http.MethodPost, base+route, strings.NewReader(method+` {"a":1}`))
			r.Header.Set("Content-Type", "text/plain")
			return r
		},
		Refusal: func(body []byte) bool {
			reason, _, ok := strings.Cut(string(body), ": ")
			return ok && reason != "" && strings.ToUpper(reason) == reason
		},
		Errors: func(body []byte) ([]string, error) {
			var errs []string
			for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
				if text, ok := strings.CutPrefix(line, "err "); ok {
					errs = append(errs, text)
				} else if !strings.HasPrefix(line, "rec ") {
					return nil, fmt.Errorf("line %q is neither rec nor err", line)
				}
			}
			return errs, nil
		},
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
