package devapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// upgrade are the headers of a WebSocket's opening handshake.
func upgrade(more map[string]string) map[string]string {
	h := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	for k, v := range more {
		h[k] = v
	}
	return h
}

// wsThrough is the WebSocket passthrough's URL path of the container path
// p ("/…").
func wsThrough(p string) string {
	return "/reasoningEngines/ws/v1beta1/projects/my-project/locations/us-central1/reasoningEngines/123/api" + p
}

// bidiEndpoint is the public bidi endpoint's path, as the Python SDK dials
// it for api_version v1beta1.
const bidiEndpoint = "/ws/google.cloud.aiplatform.v1beta1.ReasoningEngineExecutionService/BidiQueryReasoningEngine"

// liveDev is a dev listener in front of a recorder, with conversations
// listed as a door's (none: no door converses).
func liveDev(t *testing.T, conversations ...Live) (string, *recorder) {
	t.Helper()
	rc := &recorder{}
	contract := httptest.NewServer(rc)
	var opts Options
	if len(conversations) > 0 {
		opts.Doors = []Door{{Protocol: "live", URL: contract.URL + "/live", Mount: "/live", Live: conversations}}
		for i := range conversations {
			conversations[i].URL = contract.URL + "/live"
		}
	}
	dev := httptest.NewServer(New(newStackConfig(t), contract.URL, opts))
	t.Cleanup(func() { dev.Close(); contract.Close() })
	return dev.URL, rc
}

// platformLive is a conversation in the platform's framing at the live
// door's mount.
var platformLive = Live{Conversation: core.Conversation{Path: "/", Methods: []string{"talk"}, Platform: true}, Passthrough: WSPassthroughPath("/live")}

// TestDevUpgradeGuard: an upgrade is held to the Origin rule of a request
// that changes something, though it is a GET (a browser lets any page open
// a WebSocket and read it): on the WebSocket passthrough and on the bidi
// endpoint, a cross-site Origin and a rebinding Host are refused 403 in
// the dev API's shape before the contract listener is called; the dev
// listener's own page's Origin goes on.
func TestDevUpgradeGuard(t *testing.T) {
	dev, rc := liveDev(t, platformLive)
	port := devPort(dev)
	for _, path := range []string{wsThrough("/live"), bidiEndpoint} {
		for _, tt := range []struct {
			name, host string
			header     map[string]string
			want       int
		}{
			{"cross-site Origin", "", map[string]string{"Origin": "http://evil.example"}, 403},
			{"another loopback port's Origin", "", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
			{"rebinding Host", "evil.example:" + port, nil, 403},
			{"own Origin", "", map[string]string{"Origin": "http://127.0.0.1:" + port}, 200},
			{"no Origin", "", nil, 200},
		} {
			before := rc.calls()
			code, _, body := send(t, http.MethodGet, dev, path, tt.host, upgrade(tt.header), "")
			if code != tt.want {
				t.Errorf("%s: %s: %d %s, want %d", path, tt.name, code, body, tt.want)
			}
			if called := rc.calls() > before; called != (tt.want == 200) {
				t.Errorf("%s: %s: the contract listener called: %v", path, tt.name, called)
			}
			if tt.want == 403 && !strings.Contains(body, `"status":"PERMISSION_DENIED"`) {
				t.Errorf("%s: %s: %s, want the dev API's PERMISSION_DENIED", path, tt.name, body)
			}
		}
	}
}

// TestDevBidiEndpointNoDoor: without a door that converses in the
// platform's framing, the bidi endpoint is refused before the upgrade,
// 501 in the dev API's shape, saying what to add to sidecar.yaml (with a
// bidi method of the map, its name); the contract listener is not called.
func TestDevBidiEndpointNoDoor(t *testing.T) {
	raw := Live{Conversation: core.Conversation{Path: "/", Methods: []string{"talk"}}, Passthrough: WSPassthroughPath("/live")}
	for _, tt := range []struct {
		name  string
		doors []Live
		say   []string
	}{
		{"no door", nil, []string{"protocols:", "live: {mount: /live, method: "}},
		{"a raw door", []Live{raw}, []string{"protocols:", "framing: raw", "live (/live)"}},
	} {
		dev, rc := liveDev(t, tt.doors...)
		code, _, body := send(t, http.MethodGet, dev, bidiEndpoint, "", upgrade(nil), "")
		if code != 501 || !strings.Contains(body, `"status":"UNIMPLEMENTED"`) {
			t.Errorf("%s: %d %s, want 501 UNIMPLEMENTED", tt.name, code, body)
		}
		for _, s := range tt.say {
			if !strings.Contains(body, s) {
				t.Errorf("%s: %s does not say %q", tt.name, body, s)
			}
		}
		if n := rc.calls(); n != 0 {
			t.Errorf("%s: the contract listener got %d calls", tt.name, n)
		}
	}
}

// TestDevWebSocketShapes: the WebSocket passthrough and the bidi endpoint
// take WebSockets only, and the HTTP passthrough takes none (each is
// refused 400 naming the other); a container path with a dot segment is
// refused on the WebSocket passthrough as on the HTTP one. None reaches
// the contract listener.
func TestDevWebSocketShapes(t *testing.T) {
	dev, rc := liveDev(t, platformLive)
	for _, tt := range []struct {
		name, path string
		header     map[string]string
		say        string
	}{
		{"a GET on the WebSocket passthrough", wsThrough("/live"), nil, "open it as a WebSocket"},
		{"a GET on the bidi endpoint", bidiEndpoint, nil, "open it as a WebSocket"},
		{"an upgrade on the HTTP passthrough", through("/live"), upgrade(nil), "/reasoningEngines/ws/v1/projects/my-project/locations/us-central1/reasoningEngines/123/api/live"},
		{"a dot segment", wsThrough("/x/../live"), upgrade(nil), "dot segments"},
		{"an escaped dot segment", wsThrough("/x/%2e%2e/live"), upgrade(nil), "dot segments"},
	} {
		code, _, body := send(t, http.MethodGet, dev, tt.path, "", tt.header, "")
		if code != 400 || !strings.Contains(body, `"status":"INVALID_ARGUMENT"`) || !strings.Contains(body, tt.say) {
			t.Errorf("%s: %d %s, want 400 INVALID_ARGUMENT saying %q", tt.name, code, body, tt.say)
		}
	}
	if n := rc.calls(); n != 0 {
		t.Errorf("the contract listener got %d calls", n)
	}
}
