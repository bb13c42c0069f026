package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/otlptest"
)

// TestTracingBadEnv: a bad OTEL_* value stops the sidecar at startup
// with exit status 1 and a message naming the variable.
func TestTracingBadEnv(t *testing.T) {
	cfg := writeConfig(t, "upstream: {url: \"http://127.0.0.1:1\"}\nmethods:\n  query: {}\n")
	tests := []struct{ env, want string }{
		{"OTEL_TRACES_SAMPLER=sometimes", `OTEL_TRACES_SAMPLER: "sometimes" is not supported`},
		{"OTEL_EXPORTER_OTLP_PROTOCOL=thrift", `OTEL_EXPORTER_OTLP_PROTOCOL: "thrift"`},
		{"OTEL_SDK_DISABLED=maybe", `OTEL_SDK_DISABLED: "maybe" is not true or false`},
	}
	for _, tt := range tests {
		cmd := exec.Command(binary, "--config", cfg, "--listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", tt.env)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "sidecar: tracing: "+tt.want) {
			t.Errorf("sidecar with %s: exit %d (%v), output %s; want exit 1 saying %q", tt.env, code, err, out, tt.want)
		}
	}
}

// TestTracingRedactsEndpoint: an OTLP endpoint with credentials in its
// userinfo and query shows neither in the start-up line, nor in the
// error of a bad value beside it (OTEL_TRACES_SAMPLER_ARG=NaN, refused).
func TestTracingRedactsEndpoint(t *testing.T) {
	const endpoint = "http://alice:s3cr3t@127.0.0.1:1/?token=abc123"
	secrets := []string{"alice", "s3cr3t", "abc123"}
	p := startProc(t, "upstream: {url: \"http://127.0.0.1:1\"}\nmethods:\n  query: {}\n", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint})
	want := `"endpoint":"http://REDACTED@127.0.0.1:1/v1/traces?token=REDACTED"`
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.out(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no tracing line with %s after 10s: %s", want, p.out())
		}
	}
	for _, s := range secrets {
		if strings.Contains(p.out(), s) {
			t.Errorf("the sidecar's output shows %q: %s", s, p.out())
		}
	}

	cfg := writeConfig(t, "upstream: {url: \"http://127.0.0.1:1\"}\nmethods:\n  query: {}\n")
	cmd := exec.Command(binary, "--config", cfg, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=ftp"+strings.TrimPrefix(endpoint, "http"),
		"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=NaN")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), `"ftp://REDACTED@127.0.0.1:1/?token=REDACTED" is not an http:// or https:// URL`) ||
		!strings.Contains(string(out), `OTEL_TRACES_SAMPLER_ARG: "NaN" is not a ratio from 0 to 1`) {
		t.Errorf("a bad endpoint with credentials and NaN: exit %d, output %s", code, out)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) {
			t.Errorf("the error shows %q: %s", s, out)
		}
	}
}

// TestTracingSidecar runs the sidecar with tracing on and a door besides
// the platform's, makes a call on each just before SIGTERM and holds a
// stream open across it, and checks that the receiver gets their spans,
// flushed at shutdown (the batch delay is far longer than the test), the
// stream's ended by the drain; that the agent got traceparents naming
// the client spans; and that the log lines name the server spans in the
// project's trace.
func TestTracingSidecar(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	var mu sync.Mutex
	agentGot := map[string]string{} // traceparent by class_method
	held := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		agentGot[r.Header.Get("X-Sidecar-Class-Method")] = r.Header.Get("Traceparent")
		mu.Unlock()
		if r.URL.Path == "/hold" { // until the drain ends the call
			close(held)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	// Every door's listener is open before the first says "listening".
	cfg := fmt.Sprintf("upstream: {url: %q}\nshutdown: {drain: 1s}\nprotocols:\n  agentcore: {listen: \"127.0.0.1:0\", method: invoke}\n"+
		"methods:\n  query: {call: POST /query}\n  invoke: {call: POST /invoke}\n  hold: {mode: stream, call: POST /hold}\n", agent.URL)
	p := startProc(t, cfg, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rec.URL, "OTEL_BSP_SCHEDULE_DELAY=600000",
		"GOOGLE_CLOUD_PROJECT=my-proj", "OTEL_RESOURCE_ATTRIBUTES=team=search"})
	agentcore := p.listen("agentcore")

	const cloudTrace = "105445aa7843bc8bf206b12000100000"
	calls := []struct {
		url, method, header, value, traceID, parent, protocol string
	}{
		{p.base + "/api/reasoning_engine", "query", "X-Cloud-Trace-Context", cloudTrace + "/1;o=1", cloudTrace, "0000000000000001", "agent_platform"},
		{"http://" + agentcore + "/invocations", "invoke", "Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "agentcore"},
	}
	for _, c := range calls {
		body := `{"class_method":"query","input":{}}`
		if c.method == "invoke" {
			body = `{"prompt":"hi"}`
		}
		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
		req.Header.Set(c.header, c.value)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", c.method, resp.StatusCode)
		}
	}
	// A stream the drain will end: its span too must be sent.
	go func() {
		resp, err := testClient.Post(p.base+"/api/stream_reasoning_engine", "application/json", strings.NewReader(`{"class_method":"hold","input":{}}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-held
	if n := len(rec.Spans()); n != 0 {
		t.Fatalf("%d spans exported before SIGTERM with a 10-minute batch delay: the flush below would prove nothing", n)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1 (the held stream was ended)", code)
	}
	spans := rec.Spans()
	if s := otlptest.Find(spans, otlptest.Kind("server", "hold")); s == nil || s.Status != "error" || s.Attrs["sidecar.outcome"] != "shutting_down" {
		t.Errorf("the stream the drain ended: server span %+v, want one with status error, outcome shutting_down", s)
	}
	logs := callLines(t, p.out())
	for _, c := range calls {
		server := otlptest.Find(spans, otlptest.Kind("server", c.method))
		client := otlptest.Find(spans, otlptest.Kind("client", c.method))
		if server == nil || client == nil {
			t.Fatalf("%s: server span %v, client span %v; the receiver got %+v", c.method, server, client, spans)
		}
		if server.TraceID != c.traceID || server.Parent != c.parent || server.Attrs["sidecar.protocol"] != c.protocol ||
			server.Resource["service.name"] != "sidecar" || server.Resource["team"] != "search" {
			t.Errorf("%s: server span trace %s parent %s attributes %v resource %v", c.method, server.TraceID, server.Parent, server.Attrs, server.Resource)
		}
		if client.Parent != server.SpanID || client.TraceID != c.traceID {
			t.Errorf("%s: client span parent %s trace %s, want %s %s", c.method, client.Parent, client.TraceID, server.SpanID, c.traceID)
		}
		mu.Lock()
		got := agentGot[c.method]
		mu.Unlock()
		if want := "00-" + c.traceID + "-" + client.SpanID + "-01"; got != want {
			t.Errorf("%s: the agent got traceparent %q, want %q", c.method, got, want)
		}
		log := logs[c.method]
		if log["logging.googleapis.com/trace"] != "projects/my-proj/traces/"+c.traceID || log["logging.googleapis.com/spanId"] != server.SpanID ||
			log["logging.googleapis.com/trace_sampled"] != true {
			t.Errorf("%s: log line %v, want the server span %s in projects/my-proj/traces/%s", c.method, log, server.SpanID, c.traceID)
		}
	}
}

// callLines are the "call" log lines in out, by class_method.
func callLines(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	lines := map[string]map[string]any{}
	for l := range strings.SplitSeq(out, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["message"] == "call" {
			m, _ := e["class_method"].(string)
			lines[m] = e
		}
	}
	return lines
}

// TestTracingOffSidecar: OTEL_SDK_DISABLED=true keeps tracing off
// whatever the endpoint says: nothing is exported, the agent gets the
// caller's traceparent as it came.
func TestTracingOffSidecar(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	got := make(chan string, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		got <- r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	p := startProc(t, fmt.Sprintf("upstream: {url: %q}\nmethods:\n  query: {call: POST /query}\n", agent.URL),
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rec.URL, "OTEL_SDK_DISABLED=true"})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest(http.MethodPost, p.base+"/api/reasoning_engine", strings.NewReader(`{"class_method":"query","input":{}}`))
	req.Header.Set("Traceparent", tp)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if g := <-got; g != tp {
		t.Errorf("the agent got traceparent %q, want the caller's %q", g, tp)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if spans := rec.Spans(); len(spans) != 0 {
		t.Errorf("OTEL_SDK_DISABLED=true exported %+v", spans)
	}
	if strings.Contains(p.out(), `"message":"tracing"`) {
		t.Errorf("tracing said it was on: %s", p.out())
	}
}

// TestTracingSidecarGRPC: OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the
// spans over OTLP/gRPC, named by OTEL_SERVICE_NAME.
func TestTracingSidecarGRPC(t *testing.T) {
	rec := otlptest.NewGRPC(t)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	p := startProc(t, fmt.Sprintf("upstream: {url: %q}\nmethods:\n  query: {call: POST /query}\n", agent.URL),
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rec.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_SERVICE_NAME=pricer"})
	resp, err := testClient.Post(p.base+"/api/reasoning_engine", "application/json", strings.NewReader(`{"class_method":"query","input":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	spans := rec.Spans()
	server := otlptest.Find(spans, otlptest.Kind("server", "query"))
	if server == nil || server.Resource["service.name"] != "pricer" || otlptest.Find(spans, otlptest.Kind("client", "query")) == nil {
		t.Errorf("over gRPC the receiver got %+v, want the call's server (service pricer) and client spans", spans)
	}
}
