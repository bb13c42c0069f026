package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestStoreHealth: with state.store: redis, /healthz says the store is
// ok; with Redis stopped mid-run it says unreachable and still answers
// 200 (the container must not be restarted for it), and a stateless call
// is served; with Redis restarted on the same port, ok again.
func TestStoreHealth(t *testing.T) {
	srv := redistest.Start(t)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true}`))
	}))
	defer agent.Close()
	addr := serveInProcess(t, "upstream: {url: \""+agent.URL+"\"}\nmethods: {query: {}}\n"+
		"state: {store: redis, redis: {url: \""+srv.URL()+"\", key_prefix: t}}\n", defaultServerLimits)
	health := func() string {
		resp, err := testClient.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status[:3] + " " + strings.TrimSpace(string(b))
	}
	// waitHealth polls until /healthz answers want; a bound of its own
	// so that a store state never reported fails by name.
	waitHealth := func(want string) {
		t.Helper()
		got := ""
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if got = health(); got == want {
				return
			}
		}
		t.Fatalf("/healthz = %s, want %s", got, want)
	}
	waitHealth(`200 {"status":"ok","agent":"ready","store":"ok"}`)

	srv.Stop()
	waitHealth(`200 {"status":"ok","agent":"ready","store":"unreachable"}`)
	resp, err := testClient.Post("http://"+addr+"/api/reasoning_engine", "application/json", strings.NewReader(`{"class_method":"query","input":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"output":"{\"ok\":true}"}` {
		t.Errorf("a call with Redis down = %d %s, want 200 with the agent's answer", resp.StatusCode, b)
	}

	srv.Restart()
	waitHealth(`200 {"status":"ok","agent":"ready","store":"ok"}`)
}

// TestStoreUnreachableAtStart: serve with state.store: redis and no Redis
// at the URL's address returns exit code 1 at once, naming the host and
// never the password, and closes the listener it was given; an unset
// ${REDIS_URL} is named.
func TestStoreUnreachableAtStart(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop() // an address where nothing answers
	cfg, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\n"+
		"state: {store: redis, redis: {url: \"${REDIS_URL}\"}}\n"), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, env, want string
	}{
		{"unreachable", "REDIS_URL=redis://agent:hunter2@" + srv.Addr() + "/0", "sidecar: state.store redis: unreachable at start: pinging redis at " + srv.Addr() + ":"},
		{"unset", "OTHER=1", "sidecar: state.store redis: resolving state.redis.url: REDIS_URL unset or empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			// Far past the client's bounds: serve must give up by them.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err = serve(ctx, cfg, ln, zaptest.NewLogger(t), agentIO{env: append(os.Environ(), tt.env)}, defaultServerLimits)
			var exit *exitError
			if !errors.As(err, &exit) || exit.code != 1 || !strings.HasPrefix(exit.msg, tt.want) {
				t.Fatalf("serve = %#v, want exit 1 with %q", err, tt.want)
			}
			if strings.Contains(exit.msg, "hunter2") {
				t.Errorf("the message shows the password: %s", exit.msg)
			}
			if ctx.Err() != nil {
				t.Error("serve returned only when the test's bound ran out")
			}
			if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				c.Close()
				t.Error("the listener is still open after serve refused to start")
			}
		})
	}
}

// TestStoreHealthDetail: the admin listener's /healthz says why the store
// is unreachable (the public port's says only that it is).
func TestStoreHealthDetail(t *testing.T) {
	srv := redistest.Start(t)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer agent.Close()
	_, logs := startSidecarLogs(t, "upstream: {url: \""+agent.URL+"\"}\nmethods: {query: {}}\nadmin: {listen: \"127.0.0.1:0\"}\n"+
		"state: {store: redis, redis: {url: \""+srv.URL()+"\"}}\n")
	admin := "http://" + logs.addr(t, "admin") + "/healthz"
	srv.Stop()
	resp, err := testClient.Get(admin)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `"store":"unreachable","store_detail":"pinging redis at ` + srv.Addr() + `: `
	if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
		t.Errorf("admin /healthz with Redis down = %d %s, want 200 with %s…", resp.StatusCode, b, want)
	}
}
