package config

import (
	"reflect"
	"testing"
	"time"
)

func TestParseLifecycle(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(`
upstream:
  url: http://127.0.0.1:8000
  command: [python3, agent.py, --port, "8000"]
  restart: {policy: on-failure, max: 0, backoff: 250ms}
  ready: {path: /health, wait: 0}
shutdown: {drain: 20s, agent_grace: 0s}
methods: {query: }
`))
	if err != nil {
		t.Fatalf("Parse error: %v", err)
	}
	if want := []string{"python3", "agent.py", "--port", "8000"}; !reflect.DeepEqual(c.Upstream.Command, want) {
		t.Errorf("Command = %q, want %q", c.Upstream.Command, want)
	}
	if want := (Restart{Policy: RestartOnFailure, Max: 0, Backoff: 250 * time.Millisecond}); c.Upstream.Restart != want {
		t.Errorf("Restart = %+v, want %+v", c.Upstream.Restart, want)
	}
	if c.Upstream.Ready.Wait != 0 {
		t.Errorf("Ready.Wait = %v, want 0", c.Upstream.Ready.Wait)
	}
	if want := (Shutdown{Drain: 20 * time.Second}); c.Shutdown != want {
		t.Errorf("Shutdown = %+v, want %+v", c.Shutdown, want)
	}
}
