package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestKeepAliveServed: the sidecar serves keep_alive_probe on the
// platform's listener, counting the calls of the one server behind every
// door: 503 idle, 200 while a call is held by the agent, 503 once it
// ended.
func TestKeepAliveServed(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer agent.Close()
	addr := serveInProcess(t, "upstream: {url: \""+agent.URL+"\"}\nkeep_alive_probe: {path: /busy}\nmethods: {slow: {}}\n", defaultServerLimits)
	probe := func() string {
		resp, err := testClient.Get("http://" + addr + "/busy")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status[:3] + " " + string(b)
	}
	const idle = `503 {"busy":false,"calls":0}`
	if got := probe(); got != idle {
		t.Errorf("GET /busy with no call = %s, want %s", got, idle)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := testClient.Post("http://"+addr+"/api/reasoning_engine", "application/json", strings.NewReader(`{"class_method":"slow","input":{}}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the call never reached the agent")
	}
	if got, want := probe(), `200 {"busy":true,"calls":1}`; got != want {
		t.Errorf("GET /busy with a call in flight = %s, want %s", got, want)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the call: %v", err)
	}
	for end := time.Now().Add(10 * time.Second); probe() != idle; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("GET /busy = %s 10s after the call ended, want %s", probe(), idle)
		}
	}
}
