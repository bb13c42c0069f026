package config

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// greeter is a door's Kind as its package would declare it: a Target
// door whose section adds greeting, a string that must not be empty.
type greeter struct {
	Target
	Greeting string
}

var greeterKind = Kind{
	Name:   "greeter",
	Listen: ":9100",
	Decode: func(d Decoder, n *yaml.Node, path string, door *Door) bool {
		g := &greeter{}
		door.Options = g
		return d.Target(n, path, door, &g.Target, Field{Key: "greeting", Decode: func(d Decoder, e Entry, path string) {
			if s, ok := d.Scalar(e, path); ok {
				if s == "" {
					d.Addf(e.Value.Line, path, "empty (want the words a call begins with)")
					return
				}
				g.Greeting = s
			}
		}})
	},
	Check: func(d Decoder, c *Config, door *Door) { d.CheckTarget(c, door, &door.Options.(*greeter).Target) },
	Print: func(door *Door) *yaml.Node {
		g := door.Options.(*greeter)
		return PrintTarget(door, &g.Target, "greeting", Quoted(g.Greeting))
	},
}

// TestKinds: config decodes, checks and prints a protocol it knows only
// by the Kind Parse was given: its key beside agent_platform, its
// default listen, its own keys and problems (file:line, every one at
// once), the shared checks of its port, its options through Expanded and
// back; without the Kind its key is unknown.
func TestKinds(t *testing.T) {
	const base = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods: {query: {}, stream_query: {mode: stream}}\n"
	c, err := Parse("sidecar.yaml", []byte(base+"protocols:\n  greeter: {method: stream_query, greeting: hello}\n"), greeterKind)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Protocols.Door("greeter")
	if d == nil || d.Listen != ":9100" || d.Line != 4 {
		t.Fatalf("Door(greeter) = %+v, want it on :9100, declared on line 4", d)
	}
	if g := d.Options.(*greeter); g.Method != "stream_query" || !g.Stream || g.Greeting != "hello" {
		t.Errorf("options = %+v, want stream_query streaming, greeting hello", g)
	}
	if got := c.Listens(); len(got) != 2 || got[1] != [2]string{"greeter", ":9100"} {
		t.Errorf("Listens = %v", got)
	}
	again, err := Parse("printed.yaml", c.Expanded(), greeterKind)
	if err != nil || string(again.Expanded()) != string(c.Expanded()) || *again.Protocols.Door("greeter").Options.(*greeter) != *d.Options.(*greeter) {
		t.Errorf("printed and parsed again: %v\n%s", err, c.Expanded())
	}

	_, err = Parse("sidecar.yaml", []byte(base+"protocols:\n  greeter: {listen: \":8080\", method: nope, greeting: \"\", colour: red, greting: hi}\n  mcp: {}\n  greter: {}\n"), greeterKind)
	for _, want := range []string{
		`sidecar.yaml:4: protocols.greeter.greeting: empty (want the words a call begins with)`,
		`sidecar.yaml:4: protocols.greeter.colour: unknown key (want listen, mount, method or greeting)`,
		`sidecar.yaml:5: protocols.mcp: unknown key (want agent_platform or greeter)`,
		// A near key is named in a door's section, and among the doors.
		`sidecar.yaml:4: protocols.greeter.greting: unknown key: did you mean greeting? (want listen, mount, method or greeting)`,
		`sidecar.yaml:6: protocols.greter: unknown key: did you mean greeter? (want agent_platform or greeter)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v, want %q", err, want)
		}
	}
	_, err = Parse("sidecar.yaml", []byte(base+"protocols:\n  greeter: {listen: \":8080\", method: nope}\n"), greeterKind)
	for _, want := range []string{
		`sidecar.yaml:4: protocols.greeter.method: "nope" is not a method of the map (want "query" or "stream_query")`,
		`sidecar.yaml:4: protocols.greeter.listen: ":8080" is the port of agent_platform too`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v, want %q", err, want)
		}
	}
	if _, err := Parse("sidecar.yaml", []byte(base+"protocols:\n  greeter: {method: query}\n")); err == nil || !strings.Contains(err.Error(), `protocols.greeter: unknown key (want agent_platform)`) {
		t.Errorf("Parse without the Kind = %v, want greeter an unknown key", err)
	}
}

// listerKind is a door whose section has a list: names, decoded by
// Decoder.Strings, and checked as methods by CheckMethods.
var listerKind = Kind{
	Name:   "lister",
	Listen: ":9101",
	Decode: func(d Decoder, n *yaml.Node, path string, door *Door) bool {
		var names []string
		door.Options = &names
		if !d.Mapping(n, path, "a mapping with listen and names") {
			return false
		}
		for _, e := range d.Entries(n, path) {
			switch e.Name {
			case "listen":
				d.Listen(e, path+".listen", door)
			case "names":
				if l, ok := d.Strings(e, path+".names", "method names"); ok {
					names = l
				}
			default:
				d.Unknown(e, path, "listen", "names")
			}
		}
		return true
	},
	Check: func(d Decoder, c *Config, door *Door) {
		d.CheckMethods(c, door.Line, "protocols.lister.names", *door.Options.(*[]string))
	},
	Print: func(door *Door) *yaml.Node {
		return Mapping("listen", Quoted(door.Listen), "names", Strings(*door.Options.(*[]string)))
	},
}

// TestStringsList: Decoder.Strings takes a list of distinct non-empty
// strings (a null is no list and no problem), reports every other item
// at its own line, all at once; CheckMethods reports the names that are
// not methods of the map; Strings prints the list back.
func TestStringsList(t *testing.T) {
	const base = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods: {query: {}, stream_query: {mode: stream}}\n"
	c, err := Parse("sidecar.yaml", []byte(base+"protocols:\n  lister: {listen: \":9200\", names: [stream_query, query]}\n"), listerKind)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Protocols.Door("lister")
	if got := *d.Options.(*[]string); d.Listen != ":9200" || strings.Join(got, ",") != "stream_query,query" {
		t.Errorf("lister = %+v %v", d, got)
	}
	if !strings.Contains(string(c.Expanded()), "names: [stream_query, query]") {
		t.Errorf("printed:\n%s", c.Expanded())
	}
	if c, err := Parse("sidecar.yaml", []byte(base+"protocols:\n  lister: {names: null}\n"), listerKind); err != nil || *c.Protocols.Door("lister").Options.(*[]string) != nil {
		t.Errorf("names: null = %v", err)
	}
	_, err = Parse("sidecar.yaml", []byte(base+"protocols:\n  lister:\n    names:\n      - query\n      - {a: 1}\n      - \"\"\n      - query\n      - nope\n"), listerKind)
	for _, want := range []string{
		"sidecar.yaml:7: protocols.lister.names: every item must be one of the method names, not a mapping",
		"sidecar.yaml:8: protocols.lister.names: an item is empty",
		`sidecar.yaml:9: protocols.lister.names: "query" is listed twice`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a bad list = %v, want %q", err, want)
		}
	}
	_, err = Parse("sidecar.yaml", []byte(base+"protocols:\n  lister: {names: [query, nope]}\n"), listerKind)
	if err == nil || !strings.Contains(err.Error(), `protocols.lister.names: "nope" is not a method of the map (want "query" or "stream_query")`) {
		t.Errorf("an unknown method = %v", err)
	}
	_, err = Parse("sidecar.yaml", []byte(base+"protocols:\n  lister: {names: query}\n"), listerKind)
	if err == nil || !strings.Contains(err.Error(), "protocols.lister.names: want a list of method names such as [a, b], not a string") {
		t.Errorf("a string for a list = %v", err)
	}
}
