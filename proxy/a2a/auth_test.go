package a2a

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/quota"
)

// TestAdmitRefusalsInBindingShape: what the Server refuses before the
// door routes a request (a token on a protected door, a per-caller limit)
// is answered in the shape of the binding the request calls: a
// google.rpc.Status on an HTTP+JSON route, as docs/auth.md says, a
// JSON-RPC error on the JSON-RPC endpoint.
func TestAdmitRefusalsInBindingShape(t *testing.T) {
	p := idptest.Start(t)
	const rpcSend = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`
	const restSend = `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
	for _, tt := range []struct {
		name   string
		limits string // the map's limits section
		auth   bool
		status int
		reason string
		code   int // JSON-RPC's
	}{
		// The caller's to mend: -32600, as a 403; the server's state: -32603.
		{"no token", "limits: {request_bytes: 4096}", true, http.StatusUnauthorized, "UNAUTHENTICATED", -32600},
		{"over the caller's rate", "limits: {request_bytes: 4096, per_caller: {requests: 1, per: 1m}}", false, http.StatusTooManyRequests, "RATE_LIMITED", -32603},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("test.yaml", []byte(strings.NewReplacer("AGENT", "http://127.0.0.1:1", "limits: {request_bytes: 4096}", tt.limits).Replace(testMap)))
			if err != nil {
				t.Fatal(err)
			}
			if tt.auth {
				cfg.Auth = config.Auth{Issuer: p.URL, Audience: "https://agent.example.com", Doors: []string{Name}, Line: 1}
			}
			door, err := New(cfg, Options{Method: "query"})
			if err != nil {
				t.Fatal(err)
			}
			s := &proxy.Server{Config: cfg, Logger: zap.NewNop(), Protocols: []string{Name}}
			if tt.auth {
				s.Auth = auth.New(cfg.Auth, nil)
			} else {
				s.Quota = quota.New(cfg.Limits.PerCaller, nil)
			}
			srv := httptest.NewServer(s.HandlerFor(door))
			defer srv.Close()
			client := &http.Client{Timeout: 30 * time.Second}
			defer client.CloseIdleConnections()
			post := func(path, body string) (int, []byte) {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("A2A-Version", "1.0")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b
			}
			if !tt.auth { // the caller's one request of the minute: counted, then the door's 404
				if status, body := post("/no/such/path", "{}"); status != http.StatusNotFound {
					t.Fatalf("the first request = %d %s, want the door's 404", status, body)
				}
			}
			status, body := post(RouteSend, restSend)
			var rest struct {
				Error struct {
					Code    int
					Status  string
					Details []struct{ Reason, Domain string }
				}
			}
			if json.Unmarshal(body, &rest); status != tt.status || rest.Error.Code != tt.status || rest.Error.Status == "" ||
				len(rest.Error.Details) != 1 || rest.Error.Details[0].Reason != tt.reason || rest.Error.Details[0].Domain != "sidecar" {
				t.Errorf("POST %s = %d %s, want %d as a google.rpc.Status, reason %s", RouteSend, status, body, tt.status, tt.reason)
			}
			status, body = post(RouteRPC, rpcSend)
			var rpc struct {
				JSONRPC string
				Error   *struct{ Code int }
			}
			if json.Unmarshal(body, &rpc); status != tt.status || rpc.JSONRPC != "2.0" || rpc.Error == nil || rpc.Error.Code != tt.code {
				t.Errorf("POST %s = %d %s, want %d as a JSON-RPC error %d", RouteRPC, status, body, tt.status, tt.code)
			}
		})
	}
}
