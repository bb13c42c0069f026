package foundry

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestTextBodyBounded: a text body reaches the agent as a JSON string
// without HTML escaping, so 1,048,000 bytes of "<" are 1,048,002 bytes,
// not six times that; a body whose string would pass limits.request_bytes
// (control characters take six bytes each) is 413, the agent never called.
func TestTextBodyBounded(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "limits: {request_bytes: 1MiB}\n")
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))

	body := strings.Repeat("<", 1_048_000)
	resp, got := do(t, http.MethodPost, url+RouteInvocations, body)
	if sent := agent.Body(); resp.StatusCode != 200 || len(sent) != len(body)+2 || sent != `"`+body+`"` {
		t.Fatalf("1,048,000 bytes of <: %d, the agent got %d bytes (%.20q…), want 200 and %d", resp.StatusCode, len(sent), sent, len(body)+2)
	}
	if len(got) != len(`{"got":""}`)+len(body) {
		t.Errorf("reply of %d bytes, want the input back", len(got))
	}
	at := strings.Repeat("\x01", 1<<20/6) // a string of 1,048,574 bytes
	if resp, _ := do(t, http.MethodPost, url+RouteInvocations, at); resp.StatusCode != 200 || len(agent.Body()) != len(at)*6+2 {
		t.Errorf("%d control characters, a string under the limit: %d, the agent got %d bytes", len(at), resp.StatusCode, len(agent.Body()))
	}

	for _, body := range []string{strings.Repeat("\x01", 1_048_000), strings.Repeat("\x01", 1<<20/6+1)} {
		resp, got = do(t, http.MethodPost, url+RouteInvocations, body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal([]byte(got), &e); resp.StatusCode != 413 || !strings.Contains(e.Error.Message, "as a JSON string") {
			t.Errorf("%d control characters = %d %.200s, want 413 naming the string", len(body), resp.StatusCode, got)
		}
		if n := len(agent.Body()); n != 1<<20/6*6+2 {
			t.Errorf("the agent was called with %d bytes, want no call", n)
		}
	}
}

// TestTextInput: every text, control characters, quotes, backslashes,
// U+2028 and invalid-looking HTML included, is the JSON string of itself,
// as long as quotedLen says; only what JSON requires is escaped.
func TestTextInput(t *testing.T) {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	for _, text := range []string{"", "plain", `a "quoted" \path\`, "<script>&amp;</script>", "line\nbreak\r\n\ttab\b\f", "\u2028\u2029é日本😀", all.String()} {
		in, err := textInput([]byte(text), 1<<20)
		var back string
		if err != nil || json.Unmarshal(in, &back) != nil || back != text || int64(len(in)) != quotedLen([]byte(text)) {
			t.Errorf("textInput(%q) = %s, %v (decodes to %q); quotedLen %d", text, in, err, back, quotedLen([]byte(text)))
		}
		if strings.Contains(string(in), `\u003c`) || strings.Contains(string(in), `\u0026`) {
			t.Errorf("textInput(%q) = %s: HTML-escaped", text, in)
		}
	}
	if in, err := textInput([]byte("\x01\x02"), 14); err != nil || string(in) != `"\u0001\u0002"` {
		t.Errorf("a string of exactly the limit: %s, %v", in, err)
	}
	if _, err := textInput([]byte("\x01\x02"), 13); err == nil {
		t.Error("one byte over the limit: no error")
	}
}
