package dialect

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// vercelAgent serves the Vercel AI SDK fixtures as an AI SDK route
// handler does: /chat the tool run, /err the one that fails.
func vercelAgent(t *testing.T) *httptest.Server {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "dialects", "vercel-ui", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	chat, fail := read("tools.sse"), read("error.sse")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
		w.Header().Set("X-Accel-Buffering", "no")
		if r.URL.Path == "/err" {
			w.Write(fail)
			return
		}
		w.Write(chat)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const e2eConfig = `upstream: {url: "AGENT"}
methods:
  raw_query: {mode: stream, call: POST /chat}
  text_query: {mode: stream, call: POST /chat, emit: text}
  adk_query: {mode: stream, call: POST /chat, dialect: vercel-ui, emit: adk}
  fail_query: {mode: stream, call: POST /err, emit: adk}
  text_once: {call: POST /chat, emit: text}
`

// sidecar serves cfg through the real proxy in front of the agent at url,
// with the mapping stage around the HTTP client when mapped is set (as
// cmd/sidecar wires it).
func sidecar(t *testing.T, url string, mapped bool) (string, *observer.ObservedLogs) {
	cfg, err := config.Parse("e2e.yaml", []byte(strings.ReplaceAll(e2eConfig, "AGENT", url)))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	logger := zap.New(observed)
	client, err := upstream.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	var agent core.Agent = client
	if mapped {
		agent = Agent{Agent: client, Author: "chat_agent"}
	}
	s := &proxy.Server{Config: cfg, Agent: agent, Logger: logger}
	srv := httptest.NewServer(s.HandlerFor(platform.Door{}))
	t.Cleanup(func() { srv.Close(); client.Close() })
	return srv.URL, logs
}

func call(t *testing.T, url, route, method string) string {
	resp, err := http.Post(url+route, "application/json", strings.NewReader(`{"class_method":"`+method+`","input":{"message":"weather in Paris?"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s %v", route, method, resp.StatusCode, b, err)
	}
	return string(b)
}

// TestThroughProxy: a Vercel AI SDK agent behind the real proxy, its
// stream as text lines, as ADK events, and raw (the default) byte for byte
// what the sidecar answers without the mapping stage.
func TestThroughProxy(t *testing.T) {
	agent := vercelAgent(t)
	url, logs := sidecar(t, agent.URL, true)
	plain, _ := sidecar(t, agent.URL, false)

	if got, want := call(t, url, core.RouteStream, "raw_query"), call(t, plain, core.RouteStream, "raw_query"); got != want {
		t.Errorf("raw_query through the mapping stage:\n%s\nwant, as without it:\n%s", got, want)
	}

	text := call(t, url, core.RouteStream, "text_query")
	want := `{"tool_call":{"id":"call_1","name":"weather","args":{"city":"Paris"}}}
{"tool_result":{"id":"call_1","name":"weather","output":{"temperature":21}}}
{"text":"It is 21°C in Paris."}
{"end":{}}
`
	if text != want {
		t.Errorf("text_query =\n%s\nwant\n%s", text, want)
	}
	var noted []string
	for _, e := range logs.FilterMessage("call").All() {
		if d, ok := e.ContextMap()["dialect"]; ok {
			noted = append(noted, e.ContextMap()["class_method"].(string)+"="+d.(string))
		}
	}
	if strings.Join(noted, ",") != "text_query=vercel-ui" {
		t.Errorf("log lines noted dialects %q, want text_query=vercel-ui", noted)
	}

	adk := strings.Split(strings.TrimSpace(call(t, url, core.RouteStream, "adk_query")), "\n")
	shapes := []string{"functionCall", "functionResponse", "partial", "complete"}
	if len(adk) != len(shapes) {
		t.Fatalf("adk_query = %d lines, want %d:\n%s", len(adk), len(shapes), strings.Join(adk, "\n"))
	}
	for i, l := range adk {
		var ev struct {
			Author       string `json:"author"`
			InvocationID string `json:"invocationId"`
			Partial      bool   `json:"partial"`
			Content      struct {
				Role  string                       `json:"role"`
				Parts []map[string]json.RawMessage `json:"parts"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Author != "chat_agent" || ev.InvocationID == "" || len(ev.Content.Parts) != 1 {
			t.Fatalf("adk_query line %d = %s, not an ADK event (%v)", i, l, err)
		}
		part := ev.Content.Parts[0]
		switch shapes[i] {
		case "partial", "complete":
			if string(part["text"]) != `"It is 21°C in Paris."` || ev.Partial != (shapes[i] == "partial") {
				t.Errorf("adk_query line %d = %s, want the %s text event", i, l, shapes[i])
			}
		default:
			if part[shapes[i]] == nil {
				t.Errorf("adk_query line %d = %s, want a %s part", i, l, shapes[i])
			}
		}
	}

	failed := strings.Split(strings.TrimSpace(call(t, url, core.RouteStream, "fail_query")), "\n")
	last := failed[len(failed)-1]
	if len(failed) != 2 || !strings.HasPrefix(last, `{"error":{`) || !strings.Contains(last, "Rate limit exceeded") {
		t.Errorf("fail_query = %q, want a partial text event then the final error line with the agent's message", failed)
	}

	once := call(t, url, core.RouteUnary, "text_once")
	if wantOnce := `{"output":{"text":"It is 21°C in Paris.","tool_calls":[{"id":"call_1","name":"weather","args":{"city":"Paris"}}],"tool_results":[{"id":"call_1","name":"weather","output":{"temperature":21}}]}}`; strings.TrimSpace(once) != wantOnce {
		t.Errorf("text_once = %s, want %s", once, wantOnce)
	}
}
