package core

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Probe is how a client calls a door and reads its failures: what the
// shared hostile-input tests use (cmd/sidecar's TestHostileDoors). A door
// declares it with its Protocol, so a new door gets the whole table by
// registering.
type Probe struct {
	// Section is the door's protocols section placing it at at (on a
	// listener of its own, or mounted on the platform's), its calls going
	// to method; nil for agent_platform, whose requests name their method.
	// Writing at's entry (At.String) is all a door does to be tried both
	// ways.
	Section func(at At, method string) string
	// Conversations is set for a door that carries conversations only
	// (the live door): it takes no call, so Request, Refusal and Errors
	// are nil and the call rows do not apply; its conversations are tried
	// by its own package's tests.
	Conversations bool
	// Request is a call of method, which streams or not, with a small
	// input, at base: the door's URL (proxy/doors.Door.URL: its listener,
	// its mount, its endpoint's path), the same wherever it is served.
	Request func(base, method string, stream bool) *http.Request
	// Refusal reports whether body, answered before the first byte, is
	// the door's error shape.
	Refusal func(body []byte) bool
	// Errors are the failures in a stream's body, in the door's shape:
	// each one's text.
	Errors func(body []byte) ([]string, error)
	// LongID, for a door that takes ids in its body, is a call of method
	// whose id is n bytes long; nil when its ids come only in headers
	// (capped with every header by limits.header_bytes).
	LongID func(base, method string, n int) *http.Request
	// Owned, for a door that binds what a call leaves to its caller
	// (OwnerOf: A2A's tasks), is a request, with Authorization auth, for
	// what the stream whose first event is first began (its task): its
	// owner is answered, another caller refused in the door's shape, as
	// for something that does not exist. Nil for a door that keeps
	// nothing of a call.
	Owned func(base string, first []byte, auth string) *http.Request
}

// At is where a Probe's Section puts its door: on a listener of its own
// at Listen ("host:port"), or, when Mount is set, mounted on the
// platform's listener under that path (config.Door.Mount).
type At struct {
	Listen string
	Mount  string
}

// String is at as its entry in a door's section, in YAML's flow style:
// listen: "127.0.0.1:0", or mount: "/d".
func (at At) String() string {
	if at.Mount != "" {
		return fmt.Sprintf("mount: %q", at.Mount)
	}
	return fmt.Sprintf("listen: %q", at.Listen)
}

// TargetSection is the Probe.Section of a door whose section is
// config.TargetKind's: {listen or mount, method}.
func TargetSection(at At, method string) string {
	return fmt.Sprintf("{%s, method: %s}", at, method)
}

// JSONRequest is a POST of the JSON body to url, for a Probe.
func JSONRequest(url, body string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// SSEErrors reads body as data events, each one JSON value, and returns
// the text of those isError says are failures: a Probe.Errors of an SSE
// door.
func SSEErrors(body []byte, isError func(data []byte) (string, bool)) ([]string, error) {
	var errs []string
	for _, event := range strings.Split(string(body), "\n\n") {
		if event == "" {
			continue
		}
		data, ok := strings.CutPrefix(event, "data: ")
		if !ok || !json.Valid([]byte(data)) {
			return nil, fmt.Errorf("event %q is not data: <JSON>", event)
		}
		if text, bad := isError([]byte(data)); bad {
			errs = append(errs, text)
		}
	}
	return errs, nil
}
