package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCall: `sidecar call` reaches a running sidecar the way the platform
// does, plain and double-encoded, unary and streaming, with SSE framing
// on request.
func TestCall(t *testing.T) {
	a := startAgent(t, "python", false)
	base := startSidecar(t, "upstream: {url: "+a.url+", ready: {path: /health}}\n"+agentMethods)
	call := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"call", "--url", base}, args...), func(string) string { return "" }, &out, &errOut)
		return out.String(), err
	}
	out, err := call("echo", "user_id=u1", "session_id=s1", "n=3", `tags=["a"]`, "note=hello world")
	if err != nil || !strings.Contains(out, `"n":3`) || !strings.Contains(out, `"tags":["a"]`) || !strings.Contains(out, `"note":"hello world"`) || !strings.Contains(out, `/echo/u1/s1`) {
		t.Errorf("call echo = %q, %v", out, err)
	}
	out, err = call("--double-encoded", "--input", `{"user_id":"u2","session_id":"s2"}`, "echo")
	if err != nil || !strings.Contains(out, `/echo/u2/s2`) {
		t.Errorf("double-encoded call = %q, %v", out, err)
	}
	out, err = call("--stream", "sse")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.HasPrefix(out, `{"i":0,"text":"tok0"}`) {
		t.Errorf("stream call = %q, %v", out, err)
	}
	out, err = call("--stream", "--sse", "sse")
	if err != nil || !strings.HasPrefix(out, "data: {\"i\":0,\"text\":\"tok0\"}\n\n") || strings.Count(out, "data: ") != 3 {
		t.Errorf("--sse call = %q, %v", out, err)
	}
	// Flags after the method count as before it.
	out, err = call("sse", "--stream", "--sse")
	if err != nil || strings.Count(out, "data: ") != 3 {
		t.Errorf("call sse --stream --sse = %q, %v, want the SSE-framed stream", out, err)
	}
	out, err = call("echo", "--input", `{"user_id":"u3"}`, "session_id=s3")
	if err != nil || !strings.Contains(out, `/echo/u3/s3`) {
		t.Errorf("call echo --input … session_id=s3 = %q, %v", out, err)
	}
	// After --, an argument that looks like a flag is a field.
	out, err = call("echo", "user_id=u4", "session_id=s4", "--", "--stream=yes")
	if err != nil || !strings.Contains(out, `"--stream":"yes"`) {
		t.Errorf("call echo … -- --stream=yes = %q, %v, want the field --stream", out, err)
	}
	// The wrong route says which flag to add or drop, not which REST verb.
	var ee *exitError
	if _, err = call("sse"); !errors.As(err, &ee) || ee.code != 1 || !strings.HasPrefix(ee.msg, `sidecar call: "sse" is a streaming method: add --stream`) {
		t.Errorf("call of a streaming method without --stream = %v, want exit 1 saying add --stream", err)
	}
	if _, err = call("--stream", "echo"); !errors.As(err, &ee) || ee.code != 1 || !strings.HasPrefix(ee.msg, `sidecar call: "echo" is a unary method: drop --stream`) {
		t.Errorf("call of a unary method with --stream = %v, want exit 1 saying drop --stream", err)
	}
	_, err = call("nope")
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(ee.msg, "400") || !strings.Contains(ee.msg, "not found") {
		t.Errorf("call of an unknown method = %v, want exit 1 with the 400 detail", err)
	}
	if _, err = call("echo", "novalue"); !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("call with a bad field = %v, want exit 2", err)
	}
	// A stream that ends with an error line: every line is printed, and
	// the call exits 1 saying why.
	out, err = call("--stream", "sse_error")
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(ee.msg, "500 INTERNAL") || !strings.Contains(ee.msg, "AGENT_ERROR") || !strings.Contains(ee.msg, "model overloaded") {
		t.Errorf("stream ending in an error line = %v, want exit 1 naming the error", err)
	}
	if !strings.HasPrefix(out, `{"i":0}`+"\n") || !strings.Contains(out, `"reason":"AGENT_ERROR"`) {
		t.Errorf("stream ending in an error line printed %q, want the record and the error line", out)
	}
}
