package adk

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestDoorInput: a door's input (ids, no user_id nor session_id) gets a
// user and a session derived from its context alone: the same for the
// same context, others for another, one safe path segment whatever the
// caller's contextId holds. An input that names a user or a session is
// left as it is.
func TestDoorInput(t *testing.T) {
	input := func(raw string) core.Input {
		var f map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			t.Fatal(err)
		}
		return core.Input{Raw: json.RawMessage(raw), Fields: f}
	}
	ids := func(in core.Input) (string, string) {
		var user, sid string
		json.Unmarshal(in.Fields["user_id"], &user)
		json.Unmarshal(in.Fields["session_id"], &sid)
		return user, sid
	}
	door := func(ctx string) (string, string) {
		in := input(`{"message":"hi","ids":{"context_id":` + quote(ctx) + `,"task_id":"t"}}`)
		out, ok := doorInput(in)
		if !ok {
			t.Fatalf("doorInput(%s) is not a door's input", in.Raw)
		}
		if _, set := in.Fields["user_id"]; set {
			t.Fatal("doorInput changed its argument's fields")
		}
		return ids(out)
	}
	u1, s1 := door("0123456789abcdef.c1")
	u2, s2 := door("0123456789abcdef.c1")
	u3, s3 := door("fedcba9876543210.c1")
	if u1 != u2 || s1 != s2 || u1 == u3 || s1 == s3 {
		t.Errorf("users %q %q %q, sessions %q %q %q: want the same for one context, others for another", u1, u2, u3, s1, s2, s3)
	}
	if !strings.HasPrefix(u1, "door-") || !strings.HasPrefix(s1, "ctx-") || len(s1) != 4+doorKeyLen {
		t.Errorf("user %q, session %q", u1, s1)
	}
	for _, ctx := range []string{"0123456789abcdef./../..", "0123456789abcdef.a/b", "0123456789abcdef.."} {
		u, s := door(ctx)
		if checkSegment("user_id", u) != nil || checkSegment("session_id", s) != nil || strings.ContainsAny(u+s, "/.%") {
			t.Errorf("context %q: user %q, session %q, want plain segments", ctx, u, s)
		}
	}
	for _, raw := range []string{
		`{"message":"hi","user_id":"u","ids":{"context_id":"c"}}`,
		`{"message":"hi","session_id":"s","ids":{"context_id":"c"}}`,
		`{"message":"hi"}`,
		`{"message":"hi","ids":{"context_id":""}}`,
		`{"message":"hi","ids":"c"}`,
	} {
		if out, ok := doorInput(input(raw)); ok || len(out.Fields) != len(input(raw).Fields) {
			t.Errorf("doorInput(%s) = %v, want it left as it is", raw, ok)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
