//go:build !nethttp

package upstream

import "net/http"

// netHTTP is false in the default build: the hand-written transport
// serves every request, and the nethttp build's hooks (nethttp.go) are
// compiled out.
const netHTTP = false

func (t *transport) netRoundTrip(*http.Request) (*http.Response, error) { panic("nethttp build only") }

func (t *transport) netCloseIdle() {}
