package adk

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestPathSegmentsEscaped: a user_id or session_id holding "/" and ".."
// reaches the ADK api server as one escaped path segment each, never as
// a path that climbs: the server sees the user and session named as sent.
func TestPathSegmentsEscaped(t *testing.T) {
	srv, url := newStandIn(t, `["weather"]`, false)
	a, methods := newApp(t, url)
	ctx := testContext(t, 10*time.Second)
	const user, id = "u/../../x", "s/../../../list-apps?#"
	in := input(t, `{"user_id":"u/../../x","session_id":"s/../../../list-apps?#"}`)
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
	const session = "/apps/weather/users/u%2F..%2F..%2Fx/sessions/s%2F..%2F..%2F..%2Flist-apps%3F%23"
	for _, want := range []string{"GET " + session, "DELETE " + session} {
		if !slices.Contains(srv.requests, want) {
			t.Errorf("the server never saw %q; requests %q", want, srv.requests)
		}
	}
	if srv.count() != 0 {
		t.Errorf("the session outlived delete_session; requests %q", srv.requests)
	}
}
