package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// headerAgent records the headers of every request it gets and answers {}.
func headerAgent(t *testing.T) (*httptest.Server, <-chan http.Header) {
	t.Helper()
	seen := make(chan http.Header, 16)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		seen <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(agent.Close)
	return agent, seen
}

// TestSetUserAgent: a User-Agent in headers.set replaces the sidecar's
// own, so the agent sees one User-Agent, not two.
func TestSetUserAgent(t *testing.T) {
	agent, seen := headerAgent(t)
	h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nheaders: {set: {User-Agent: my-agent-client/2}}\nmethods: {query: {}}\n")
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Fatalf("call = %d %s", r.status, r.body)
	}
	if got := (<-seen)["User-Agent"]; len(got) != 1 || got[0] != "my-agent-client/2" {
		t.Errorf("agent saw User-Agent %q, want exactly [my-agent-client/2]", got)
	}

	plain := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods: {query: {}}\n")
	if r := plain.unary("query", `{}`); r.status != 200 {
		t.Fatalf("call = %d %s", r.status, r.body)
	}
	if got := (<-seen)["User-Agent"]; len(got) != 1 || got[0] != "sidecar" {
		t.Errorf("without headers.set the agent saw User-Agent %q, want [sidecar]", got)
	}
}

// TestReplyBytesOverflow: a reply_bytes so large that a limit plus one
// overflows made every unary reply {"output":null}; it is a config error
// now, and the largest allowed value carries replies whole.
func TestReplyBytesOverflow(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"answer":42}`)
	}))
	defer agent.Close()
	for _, size := range []string{"9223372036854775807", "1GiB"} {
		yaml := "limits: {reply_bytes: " + size + "}\n" + strings.ReplaceAll(oneMethodConfig, "AGENT", agent.URL)
		if _, err := config.Parse("test.yaml", []byte(yaml)); err != nil {
			if size == "1GiB" || !strings.Contains(err.Error(), "limits.reply_bytes") {
				t.Errorf("reply_bytes %s: Parse error %v", size, err)
			}
			continue
		}
		h := newHarness(t, agent.URL, "limits: {reply_bytes: "+size+"}\n"+oneMethodConfig)
		if r := h.unary("query", `{}`); r.status != 200 || strings.TrimSpace(r.body) != `{"output":{"answer":42}}` {
			t.Errorf("reply_bytes %s: unary reply = %d %s, want the agent's reply", size, r.status, r.body)
		}
	}
}

// TestStreamTotalFinalLine: a stream that reaches timeouts.total ends with
// the sidecar's final timeout line, after the records sent before it, not
// with a severed connection.
func TestStreamTotalFinalLine(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(w, "{\"i\":%d}\n", i)
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "timeouts: {total: 300ms}\n"+oneMethodConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := h.open(ctx, config.RouteStream, `{"class_method":"stream_query","input":{}}`)
	body, err := io.ReadAll(s.r)
	if err != nil {
		t.Fatalf("reading the stream: %v (got %q)", err, body)
	}
	got := lines(t, string(body))
	if len(got) < 2 || got[0] != `{"i":0}` {
		t.Fatalf("lines = %q, want records and a final error line", got)
	}
	last := got[len(got)-1]
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(last), &v) != nil || v["error"] == nil || !strings.Contains(strings.ToLower(last), "timeout") {
		t.Errorf("final line = %s, want an error line naming the timeout", last)
	}
}
