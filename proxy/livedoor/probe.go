package livedoor

import "github.com/sidecar-dev/sidecar/proxy/core"

// probe places the door for the shared tests: it carries conversations
// only, so it has no Request (its hostile conversations are this
// package's tests).
var probe = core.Probe{
	Conversations: true,
	Section: func(at core.At, method string) string {
		return "{" + at.String() + ", method: " + method + "}"
	},
}
