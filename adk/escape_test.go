package adk

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestPathSegmentsEscaped: a user_id or session_id holding "/", "?" or
// "#" reaches the ADK api server as one escaped path segment each, never
// as a path that climbs or a query: the server sees the user and session
// named as sent.
func TestPathSegmentsEscaped(t *testing.T) {
	srv, url := newStandIn(t, `["weather"]`, false)
	a, methods := newApp(t, url)
	ctx := testContext(t, 10*time.Second)
	const user, id = "u/x", "s/..x/list-apps?#"
	in := input(t, `{"user_id":"u/x","session_id":"s/..x/list-apps?#"}`)
	out, err := a.Unary(ctx, methods["create_session"], "create_session", in, nil)
	var s map[string]any
	if err != nil || json.Unmarshal(out, &s) != nil || s["id"] != id || s["userId"] != user {
		t.Fatalf("create_session = %s, %v; want the session %q of user %q", out, err, id, user)
	}
	if srv.session(user, id) == nil {
		t.Fatalf("the server has no session %q of user %q; requests %q", id, user, srv.requests)
	}
	if _, err := a.Unary(ctx, methods["get_session"], "get_session", in, nil); err != nil {
		t.Fatalf("get_session: %v", err)
	}
	if _, err := a.Unary(ctx, methods["delete_session"], "delete_session", in, nil); err != nil {
		t.Fatalf("delete_session: %v", err)
	}
	const session = "/apps/weather/users/u%2Fx/sessions/s%2F..x%2Flist-apps%3F%23"
	for _, want := range []string{"GET " + session, "DELETE " + session} {
		if !slices.Contains(srv.requests, want) {
			t.Errorf("the server never saw %q; requests %q", want, srv.requests)
		}
	}
	if srv.count() != 0 {
		t.Errorf("the session outlived delete_session; requests %q", srv.requests)
	}
}

// TestDotSegmentsRefused: a user_id or session_id with a "." or ".." part
// once split on "/" is refused, naming the field, before any request: a
// proxy that decodes %2F before the server would climb with it.
func TestDotSegmentsRefused(t *testing.T) {
	srv, url := newStandIn(t, `["weather"]`, false)
	a, methods := newApp(t, url)
	ctx := testContext(t, 10*time.Second)
	for _, tt := range []struct{ method, in, field string }{
		{"create_session", `{"user_id":"u/../../x"}`, "user_id"},
		{"create_session", `{"user_id":".."}`, "user_id"},
		{"create_session", `{"user_id":"u","session_id":"s/./x"}`, "session_id"},
		{"get_session", `{"user_id":"u","session_id":"x/.."}`, "session_id"},
		{"list_sessions", `{"user_id":"../admin"}`, "user_id"},
		{"delete_session", `{"user_id":"u/..","session_id":"s"}`, "user_id"},
		{"async_add_session_to_memory", `{"session":{"id":"s","user_id":"u/../x"}}`, "session"},
	} {
		_, err := a.Unary(ctx, methods[tt.method], tt.method, input(t, tt.in), nil)
		var ie *core.InputError
		if !errors.As(err, &ie) || ie.Field != tt.field || !strings.Contains(ie.Msg, `".."`) {
			t.Errorf("%s(%s) = %v, want an input error naming %s", tt.method, tt.in, err, tt.field)
		}
	}
	if len(srv.requests) != 0 {
		t.Errorf("the server saw %q, want no request", srv.requests)
	}
}
