package deploy

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/a2a"
)

// a2aMap mounts the A2A door on the platform's port, on a streaming
// method.
const a2aMap = `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  stream_query: {mode: stream}
protocols:
  a2a: {mount: /a2a, method: stream_query, card: {name: Price agent, description: Prices <things>}}
`

// a2aCardOf is the card the A2A door of yaml serves off the platform, as
// `sidecar a2a-card` prints it.
func a2aCardOf(t *testing.T, yaml string) json.RawMessage {
	t.Helper()
	card, err := a2a.CardOf(parse(t, yaml), "", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// TestA2ASpec: the card becomes spec.agentCard with HTTP+JSON 1.0 its first
// interface and nothing else changed, and the methods are those Google's
// template registers for the card's capabilities, each carrying the card.
func TestA2ASpec(t *testing.T) {
	door := a2aCardOf(t, a2aMap)
	card, methods, err := a2aSpec(door)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	json.Unmarshal(card, &got)
	json.Unmarshal(door, &want)
	ifaces := got["supportedInterfaces"].([]any)
	if first := ifaces[0].(map[string]any); first["protocolBinding"] != "HTTP+JSON" || first["protocolVersion"] != "1.0" {
		t.Errorf("first interface = %v, want HTTP+JSON 1.0", first)
	}
	// The same interfaces, in the door's order but the moved one.
	wantIfaces := want["supportedInterfaces"].([]any)
	i := slices.IndexFunc(wantIfaces, func(v any) bool { return reflect.DeepEqual(v, ifaces[0]) })
	if i < 0 || !reflect.DeepEqual(ifaces[1:], slices.Delete(slices.Clone(wantIfaces), i, i+1)) {
		t.Errorf("interfaces = %v, want the door's %v with HTTP+JSON 1.0 first", ifaces, wantIfaces)
	}
	delete(got, "supportedInterfaces")
	delete(want, "supportedInterfaces")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("agentCard = %v, want the door's card %v", got, want)
	}
	var names []string
	for _, m := range methods {
		names = append(names, m.Name)
		if m.APIMode != ModeA2A || m.A2AAgentCard != string(card) {
			t.Errorf("method %s: api_mode %q, a2a_agent_card %q; want %q and the agentCard", m.Name, m.APIMode, m.A2AAgentCard, ModeA2A)
		}
	}
	if want := append(slices.Clone(a2aMethods), a2aStreamMethods...); !slices.Equal(names, want) {
		t.Errorf("methods of a streaming card = %v, want %v", names, want)
	}

	// A card that does not stream: no streaming methods; one with an
	// extended card: the method that gets it.
	unary := strings.Replace(string(door), `"streaming": true`, `"streaming": false, "extendedAgentCard": true`, 1)
	if unary == string(door) {
		t.Fatalf("the door's card says no streaming: %s", door)
	}
	_, methods, err = a2aSpec(json.RawMessage(unary))
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, m := range methods {
		names = append(names, m.Name)
	}
	if want := append(slices.Clone(a2aMethods), a2aExtendedCardMethod); !slices.Equal(names, want) {
		t.Errorf("methods of a unary card with an extended card = %v, want %v", names, want)
	}

	for _, tc := range []struct{ card, want string }{
		{`[]`, "reading the a2a card"},
		{`{"supportedInterfaces": {}}`, "reading the a2a card"},
		{`{}`, "supportedInterfaces is not a list"},
		{`{"supportedInterfaces": [{"url": "https://x/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}`, "no HTTP+JSON 1.0 interface"},
		{`{"supportedInterfaces": [{"url": "/a2a", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]}`, "not an http or https URL"},
	} {
		if _, _, err := a2aSpec(json.RawMessage(tc.card)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("a2aSpec(%s): err = %v, want one containing %q", tc.card, err, tc.want)
		}
	}
}

// TestA2ARequest: CreateRequest with a card adds spec.agentCard and the
// A2A methods after the map's; without one, neither; a map method named
// as an A2A operation is refused.
func TestA2ARequest(t *testing.T) {
	cfg := parse(t, pythonMap)
	plain, err := CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "agentCard") || strings.Contains(string(plain), "a2a_") {
		t.Errorf("a request without a card mentions A2A:\n%s", plain)
	}
	card := a2aCardOf(t, a2aMap)
	body, err := CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i", A2ACard: card})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Spec struct {
			ClassMethods []ClassMethod  `json:"classMethods"`
			AgentCard    map[string]any `json:"agentCard"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	own := ClassMethods(cfg)
	if got := req.Spec.ClassMethods[:len(own)]; !reflect.DeepEqual(got, own) {
		t.Errorf("the map's methods = %v, want %v first", got, own)
	}
	if n := len(req.Spec.ClassMethods) - len(own); n != len(a2aMethods)+len(a2aStreamMethods) {
		t.Errorf("%d A2A methods, want %d", n, len(a2aMethods)+len(a2aStreamMethods))
	}
	if req.Spec.AgentCard["name"] != "Price agent" {
		t.Errorf("agentCard = %v", req.Spec.AgentCard)
	}

	_, err = CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i", A2ACard: card, Methods: []ClassMethod{{Name: "on_get_task"}}})
	if err == nil || !strings.Contains(err.Error(), "method on_get_task: declared by the map and as an A2A operation") {
		t.Errorf("a method named on_get_task beside --a2a: err = %v", err)
	}
}
