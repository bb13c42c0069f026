package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// anonymous is the owner of a request with no Authorization header.
var anonymous = core.OwnerOf(nil)

// got is the agent's input as /input echoed it: the data part of a task's
// artifact, {"got": <the body>}.
func got(t *testing.T, tk taskJSON) json.RawMessage {
	t.Helper()
	if len(tk.Artifacts) != 1 || len(tk.Artifacts[0].Parts) != 1 || tk.Artifacts[0].Parts[0].Data == nil {
		t.Fatalf("the task's artifact is %+v, want one data part, the agent's input", tk.Artifacts)
	}
	var v struct{ Got json.RawMessage }
	if err := json.Unmarshal(tk.Artifacts[0].Parts[0].Data, &v); err != nil {
		t.Fatal(err)
	}
	return v.Got
}

// TestInputShape: a message calls the method with the shape every
// conversational door gives (docs/doors.md): message, the text parts
// joined by a newline, as sent; messages, the task's history, the one
// user message as {role, content}; parts, its data part in the one
// shape (docs/parts.md); ids, the task's context (scoped to its
// caller, TestContextScoped) and task ids.
// A method's body template reshapes it, nested keys and the history
// included.
func TestInputShape(t *testing.T) {
	url := serve(t, "input")
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","contextId":"c1",` +
		`"parts":[{"kind":"text","text":"a \"q\" <é>"},{"kind":"data","data":{"x":1}},{"kind":"text","text":"b\u2028"}]}}}`
	r := call(t, url, "", body)
	tk := decode[taskJSON](t, r.Result)
	want := `{"message":"a \"q\" <é>\nb\u2028","messages":[{"role":"user","content":"a \"q\" <é>\nb\u2028"}],"parts":[{"data":{"x":1}}],` +
		`"ids":{"context_id":"` + anonymous.Scope("c1") + `","task_id":"` + tk.ID + `"}}`
	if in := got(t, tk); string(in) != want {
		t.Errorf("the agent's input = %s, want %s", in, want)
	}

	// 1.0, one part, no contextId: a new one.
	r = call(t, serve(t, "input"), "1.0", send1("2", "SendMessage", "hi"))
	tk = *decode[struct{ Task *taskJSON }](t, r.Result).Task
	want = `{"message":"hi","messages":[{"role":"user","content":"hi"}],"ids":{"context_id":"` + anonymous.Scope(tk.ContextID) + `","task_id":"` + tk.ID + `"}}`
	if in := got(t, tk); string(in) != want || tk.ContextID == "" {
		t.Errorf("the agent's input = %s, want %s", in, want)
	}

	// The method's body template reads the shape.
	r = call(t, serve(t, "templated"), "", body)
	tk = decode[taskJSON](t, r.Result)
	var in struct {
		Text, Session string
		History       []struct{ Role, Content string }
	}
	if err := json.Unmarshal(got(t, tk), &in); err != nil || in.Text != "a \"q\" <é>\nb\u2028" || in.Session != anonymous.Scope("c1") ||
		len(in.History) != 1 || in.History[0].Role != "user" || in.History[0].Content != in.Text {
		t.Errorf("the templated input = %s (%v), want text, session and history from the shape", got(t, tk), err)
	}
}

// TestInputBounded: the input holds the text twice (message and the
// history), so a message's body is bounded by limits.request_bytes, and
// one far past it is refused before any copy: 413, the agent never
// called; one just under it is served, its input about twice the text.
func TestInputBounded(t *testing.T) {
	url := serve(t, "input") // limits.request_bytes: 4096
	resp := rpc(t, url, "", send0("1", "message/send", strings.Repeat("x", 4096*256)))
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("a message of 1 MiB, 256 times the limit: %d, want 413", resp.StatusCode)
	}
	text := strings.Repeat("y", 3800)
	r := call(t, url, "", send0("2", "message/send", text))
	tk := decode[taskJSON](t, r.Result)
	if in := got(t, tk); len(in) > 2*len(text)+200 || !strings.Contains(string(in), `"content":"`+text+`"`) {
		t.Errorf("the input of a %d-byte text is %d bytes: %.100s", len(text), len(in), in)
	}
}

// TestEndRecordIsNoContent: behind a method with emit: text the mapping
// stage ends the agent's stream with {"end": {}}; it closes the stream
// and becomes no part: message/send's task, tasks/get's, and
// message/stream's artifact-updates hold the text only, in both versions.
func TestEndRecordIsNoContent(t *testing.T) {
	url := serve(t, "story")
	check := func(what string, result json.RawMessage) {
		t.Helper()
		if strings.Contains(string(result), `"end"`) || strings.Contains(string(result), `"data"`) || strings.Contains(string(result), `"metadata"`) {
			t.Errorf("%s: %s holds the end record", what, result)
		}
	}
	for _, v := range []string{"", "1.0"} {
		send, stream, get := send0, "message/stream", "tasks/get"
		if v == "1.0" {
			send, stream, get = send1, "SendStreamingMessage", "GetTask"
		}
		method := map[string]string{"": "message/send", "1.0": "SendMessage"}[v]
		r := call(t, url, v, send("1", method, "hi"))
		check(method, r.Result)
		tk := decode[taskJSON](t, r.Result)
		if v == "1.0" {
			tk = *decode[struct{ Task *taskJSON }](t, r.Result).Task
		}
		if text := tk.text(); text != "[hi] once upon a time" {
			t.Errorf("%s: the artifact's text is %q", method, text)
		}
		check(get, call(t, url, v, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"id":%q}}`, get, tk.ID)).Result)

		evs := readEvents(t, rpc(t, url, v, send("3", stream, "hi")))
		for _, e := range evs {
			check(stream, e.Result)
		}
		if last := string(evs[len(evs)-1].Result); !strings.Contains(last, "ompleted") && !strings.Contains(last, "COMPLETED") {
			t.Errorf("%s: the stream ended %s, want completed", stream, last)
		}
	}
}

// TestContextScoped: the agent sees a contextId scoped to its caller
// (core.Owner.Scope), so a caller naming another's contextId, guessed or
// leaked, reaches a conversation of its own: two callers naming the same
// contextId give the agent two context ids, one caller naming it twice
// the same one; each caller sees the contextId it wrote, unscoped.
func TestContextScoped(t *testing.T) {
	url := serve(t, "input")
	body := sendIDs("1", "message/send", "hi", "", "shared-ctx")
	seen := func(auth string) string {
		t.Helper()
		tk := decode[taskJSON](t, callAs(t, url, auth, "", body).Result)
		if tk.ContextID != "shared-ctx" {
			t.Errorf("as %q: the task's contextId = %q, want the caller's own %q", auth, tk.ContextID, "shared-ctx")
		}
		var in struct {
			IDs struct {
				ContextID string `json:"context_id"`
			}
		}
		if err := json.Unmarshal(got(t, tk), &in); err != nil {
			t.Fatal(err)
		}
		return in.IDs.ContextID
	}
	alice, bob, alice2 := seen("Bearer alice"), seen("Bearer bob"), seen("Bearer alice")
	if alice == bob {
		t.Errorf("two callers naming contextId %q: the agent saw %q for both, want two contexts", "shared-ctx", alice)
	}
	if alice != alice2 {
		t.Errorf("one caller naming contextId %q twice: the agent saw %q, then %q, want the same", "shared-ctx", alice, alice2)
	}
	if !strings.HasSuffix(alice, ".shared-ctx") {
		t.Errorf("the agent's context id = %q, want the caller's, scoped", alice)
	}
}
