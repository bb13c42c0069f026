package state

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// redisState is the state section of a map that names its server by
// ${REDIS_URL}.
func redisState() config.State {
	return config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: "${REDIS_URL}", KeyPrefix: "sidecar"}}
}

// env is a getenv of one variable.
func env(name, value string) func(string) string {
	return func(k string) string {
		if k == name {
			return value
		}
		return ""
	}
}

// TestPingStopRestart: the client reaches a real redis-server; stopped,
// Ping fails within the bounds naming the server's host; restarted on the
// same port, the same client answers again.
func TestPingStopRestart(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(redisState(), env("REDIS_URL", srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A bound well past DialTimeout and the one retry: a ping must fail
	// by its own timeouts, not this.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	srv.Stop()
	err = r.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "pinging redis at "+srv.Addr()) {
		t.Fatalf("Ping with the server stopped = %v, want an error naming %s", err, srv.Addr())
	}
	if ctx.Err() != nil {
		t.Fatal("Ping with the server stopped hung until the test's bound")
	}
	srv.Restart()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("Ping after the restart: %v", err)
	}
}

// TestOpenProblems: an unset variable, a resolved value that is no redis
// URL, and never the password in a message.
func TestOpenProblems(t *testing.T) {
	if _, err := Open(redisState(), env("OTHER", "x")); err == nil || !strings.Contains(err.Error(), "REDIS_URL unset or empty") {
		t.Errorf("Open with REDIS_URL unset = %v, want it named", err)
	}
	if _, err := Open(redisState(), env("REDIS_URL", "http://u:hunter2@cache:6379")); err == nil || !strings.Contains(err.Error(), `scheme "http"`) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open with an http URL = %v, want the scheme refused without the password", err)
	}
	if _, err := Open(redisState(), env("REDIS_URL", "redis://u:hunter2@cache:6379/x")); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open with a bad database = %v, want an error without the password", err)
	}
}

// TestPingNamesHostNotPassword: a server that is not there, named by a
// URL with user and password: Ping's error names the host, not the
// password, and comes within the bounds.
func TestPingNamesHostNotPassword(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	r, err := Open(redisState(), env("REDIS_URL", "redis://agent:hunter2@"+addr+"/3"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Ping = %v, want an error naming %s without the password", err, addr)
	}
	if r.Host() != addr || r.Prefix != "sidecar" {
		t.Errorf("Host, Prefix = %q, %q", r.Host(), r.Prefix)
	}
}

// TestKeyLayout: a key is the prefix and its parts, colon-separated, as
// every replica (and an operator reading Redis) expects: a task of the
// A2A door under prefix p is p:a2a:task:{id}.
func TestKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	st := redisState()
	st.Redis.KeyPrefix = "p"
	r, err := Open(st, env("REDIS_URL", srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Key("a2a", "task", "x"); got != "p:a2a:task:x" {
		t.Errorf("Key(a2a, task, x) = %q, want %q", got, "p:a2a:task:x")
	}
	if got := r.Key("quota", "addr:0f"); got != "p:quota:addr:0f" {
		t.Errorf("Key(quota, addr:0f) = %q, want %q", got, "p:quota:addr:0f")
	}
}
