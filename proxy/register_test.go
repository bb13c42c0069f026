package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestToyDoorRegisters: the toy door becomes one of the program's doors
// by one entry in a list of registrations, as every door does: config
// decodes and checks its section (its key listed among the protocols,
// its problems reported file:line), the list builds it, and its calls
// carry its name as their protocol label, from the closed set the list
// makes; its Probe (how the shared hostile-input tests call it) calls it
// and reads its refusal. Nothing in config, proxy or cmd/sidecar names it.
func TestToyDoorRegisters(t *testing.T) {
	list := append(append([]doors.Door{}, doors.All...), doors.Register(proxy.ToyProtocol, proxy.NewToyDoor))
	kinds := doors.Kinds(list)

	for _, tt := range []struct{ name, section, want string }{
		{"unknown protocol", "  nope: {method: query}", `test.yaml:4: protocols.nope: unknown key (want ` + oneOf(doors.Names(list)) + `)`},
		{"unknown method", "  toy: {method: nope}", `test.yaml:4: protocols.toy.method: "nope" is not a method of the map`},
		{"no method", "  toy: {listen: \":9100\"}", `test.yaml:4: protocols.toy.method: missing`},
		{"unknown key", "  toy: {method: query, card: {}}", `test.yaml:4: protocols.toy.card: unknown key (want listen, mount or method)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("test.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\nprotocols:\n"+tt.section+"\n"), kinds...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}

	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "protocols: {toy: {method: query}}\n", kinds...)
	s.Protocols = doors.Names(list)
	if got := s.Config.Listens(); len(got) != 2 || got[1] != [2]string{"toy", ":9100"} {
		t.Fatalf("Listens = %v, want the platform and toy on its default :9100", got)
	}
	door, err := doors.Build(list, s.Config, "toy", core.Host{InFlight: s.InFlight})
	if err != nil {
		t.Fatal(err)
	}
	if toy, ok := door.(*proxy.ToyDoor); !ok || toy.Method != "query" {
		t.Fatalf("Build(toy) = %#v, want the toy door of method query", door)
	}
	probe := list[len(list)-1].Probe
	base := s.Serve(t, door)
	resp, err := http.DefaultClient.Do(probe.Request(base, "query", false))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "out {\"got\":{\"a\":1}}\n" {
		t.Errorf("POST /ask = %d %q, want 200 out {\"got\":{\"a\":1}}", resp.StatusCode, body)
	}
	if l := s.Logs.FilterMessage("call").All(); len(l) != 1 || l[0].ContextMap()["protocol"] != "toy" {
		t.Errorf("call log lines %v, want one with protocol toy", l)
	}
	resp, err = http.DefaultClient.Do(probe.Request(base, "nope", false))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !probe.Refusal(body) {
		t.Errorf("POST /ask of no method = %d %q, want 404 its Probe reads as a refusal", resp.StatusCode, body)
	}
}

// oneOf lists names as config's messages do: "a, b or c".
func oneOf(names []string) string {
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
