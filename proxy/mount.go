package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Mount is a door served on another door's listener (the platform's)
// under a path, as one-port runtimes need: every request on a path it
// claims goes to its handler with the mount taken off the path, so the
// door routes it as on a listener of its own.
type Mount struct {
	// Path is the mount: "/" or a clean path such as /a2a
	// (config.Door.Mount).
	Path string
	// Claims are the paths it serves there (config.Config.Claims), which
	// validate made disjoint from every other owner's.
	Claims []config.Claim
	// Handler is the door's (Server.HandlerFor): the Host and Origin
	// check, its routes, its error shapes, its log line and metrics.
	Handler http.Handler
}

// Mounted serves each of mounts on the paths it claims, every other
// request with root (the platform's door). A claim matches the escaped
// path (r.URL.EscapedPath), as the doors' routes do: /a2a%2Fx is not
// under the mount /a2a, whichever binding it would name, and /%612a/x
// is not either.
func Mounted(root http.Handler, mounts []Mount) http.Handler {
	if len(mounts) == 0 {
		return root
	}
	escaped := make([][]config.Claim, len(mounts))
	for i, m := range mounts {
		for _, c := range m.Claims {
			c.Path = (&url.URL{Path: c.Path}).EscapedPath()
			escaped[i] = append(escaped[i], c)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		for i, m := range mounts {
			for _, c := range escaped[i] {
				if c.Covers(p) {
					m.Handler.ServeHTTP(w, under(r, m.Path))
					return
				}
			}
		}
		root.ServeHTTP(w, r)
	})
}

// under is r as the door mounted at mount sees it: the mount off its
// path, decoded and escaped ("/a2a" and "/a2a/" are the door's "/"), and
// the mount in its context for the door's refusals (mountOf). Mounted at
// "/" it is r. r's escaped path is under the mount (Mounted), so its
// decoded path is too: a mount has no escapes.
func under(r *http.Request, mount string) *http.Request {
	if mount == "/" {
		return r
	}
	r2 := r.WithContext(context.WithValue(r.Context(), mountKey{}, mount))
	u := *r.URL
	u.Path = inner(u.Path, mount)
	if u.RawPath != "" {
		u.RawPath = inner(r.URL.EscapedPath(), (&url.URL{Path: mount}).EscapedPath())
	}
	r2.URL = &u
	return r2
}

// inner is p, a path under mount, without it: "/" at least.
func inner(p, mount string) string {
	if p = strings.TrimPrefix(p, mount); p == "" {
		return "/"
	}
	return p
}

type mountKey struct{}

// mountOf is the mount r was served under, "" when none.
func mountOf(r *http.Request) string {
	m, _ := r.Context().Value(mountKey{}).(string)
	return m
}

// onMount says, in a refusal's message of a door mounted under mount,
// that the paths it names are under the mount: a 404 lists the door's
// routes as on a listener of its own.
func onMount(f core.Failure, mount string) core.Failure {
	if mount != "" && (f.Status == http.StatusNotFound || f.Status == http.StatusMethodNotAllowed) {
		f.Message += fmt.Sprintf(" (paths under the mount %s)", mount)
	}
	return f
}
