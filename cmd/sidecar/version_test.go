package main

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestMCPServerVersion: the MCP door's serverInfo.version is the binary's
// version (main.version, stamped by -ldflags), as openDoors builds it.
func TestMCPServerVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v9.8.7-test"
	cfg, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods:\n  query: {call: POST /q}\n"+
		"protocols:\n  agent_platform: {enabled: false}\n  mcp: {listen: \"127.0.0.1:0\"}\n"), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Config: cfg, Logger: zap.NewNop()}
	opened, err := openDoors(cfg, s, nil, nil, zap.NewNop(), serverLimits{})
	if err != nil || len(opened) != 1 {
		t.Fatalf("openDoors = %v, %v; want the MCP door", opened, err)
	}
	d := opened[0]
	go d.srv.Serve(d.ln)
	defer d.srv.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.ln.Addr().String()+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Result struct {
			ServerInfo struct{ Name, Version string }
		}
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Result.ServerInfo.Version != "v9.8.7-test" {
		t.Errorf("initialize = %d %s, want serverInfo.version v9.8.7-test", resp.StatusCode, b)
	}
}

// TestBuildVersion: the stamped version wins; without one, the module
// version the go command recorded (`go install …@v1.2.3`); without that,
// "dev".
func TestBuildVersion(t *testing.T) {
	tests := []struct {
		stamped, module string
		noInfo          bool
		want            string
	}{
		{"v1.0.0", "v2.0.0", false, "v1.0.0"},
		{"dev", "v1.2.3", false, "v1.2.3"},
		{"dev", "v0.0.0-20261206024129-a3f9391abcde", false, "v0.0.0-20261206024129-a3f9391abcde"},
		{"dev", "(devel)", false, "dev"},
		{"dev", "", false, "dev"},
		{"dev", "", true, "dev"},
	}
	for _, tt := range tests {
		info := func() (*debug.BuildInfo, bool) {
			if tt.noInfo {
				return nil, false
			}
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/sidecar-dev/sidecar", Version: tt.module}}, true
		}
		if got := buildVersion(tt.stamped, info); got != tt.want {
			t.Errorf("buildVersion(%q, module %q) = %q, want %q", tt.stamped, tt.module, got, tt.want)
		}
	}
}
