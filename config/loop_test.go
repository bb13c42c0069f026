package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestSelfLoop: an upstream.url that is the sidecar's own listen address
// on a loopback or unspecified host is a config error, with its line;
// other ports and hosts are not. $PORT is not the file's: the config does
// not read the environment (CheckListen has it, TestCheckListenLoop).
func TestSelfLoop(t *testing.T) {
	tests := []struct {
		listen, url, port string
		loop              bool
	}{
		{"", "http://127.0.0.1:8080", "", true}, // the default listen, :8080
		{"", "http://localhost:8080/base", "", true},
		{"", "http://[::1]:8080", "", true},
		{"", "http://0.0.0.0:8080", "", true},
		{"127.0.0.1:9000", "http://localhost:9000", "", true},
		{"[::]:9000", "http://127.0.0.1:9000", "", true},
		{"localhost:9000", "http://[::1]:9000", "", true},
		{"127.0.0.1:9000", "http://0.0.0.0:9000", "", true},
		{"127.0.0.1:09000", "http://localhost:9000", "", true}, // ports compared as numbers
		{"", "http://127.0.0.1:008080", "", true},
		{"", "http://127.0.0.1:8001", "8001", false}, // $PORT: CheckListen's, at run time
		{"", "http://127.0.0.1:8000", "", false},
		{"127.0.0.1:9000", "http://127.0.0.2:9000", "", false},
		{"10.0.0.5:9000", "http://127.0.0.1:9000", "", false},
		{"", "http://agent.internal:8080", "", false},
		{":0", "http://127.0.0.1:8080", "", false},
	}
	for _, tt := range tests {
		t.Setenv("PORT", tt.port)
		yaml := "upstream:\n  url: '" + tt.url + "'\nmethods: {q: {body: envelope}}\n"
		if tt.listen != "" {
			yaml += "listen: '" + tt.listen + "'\n"
		}
		_, err := Parse("sidecar.yaml", []byte(yaml))
		switch {
		case tt.loop && (err == nil || !strings.HasPrefix(err.Error(), "sidecar.yaml:2: upstream.url: ") || !strings.Contains(err.Error(), "the sidecar's own address")):
			t.Errorf("listen %q, url %q, PORT %q: error %v, want the loop at line 2", tt.listen, tt.url, tt.port, err)
		case !tt.loop && err != nil:
			t.Errorf("listen %q, url %q, PORT %q: error %v, want none", tt.listen, tt.url, tt.port, err)
		}
	}
}

// TestCheckListenLoop: the address the platform listener will have (from
// --listen or $PORT, moved to loopback by sidecar dev) is refused when it
// is upstream.url's, saying where it came from.
func TestCheckListenLoop(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte("upstream: {url: 'http://127.0.0.1:3000'}\nmethods: {q: }\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ addr, from, want string }{
		{"0.0.0.0:3000", "$PORT=3000", `the agent_platform listener 0.0.0.0:3000 (from $PORT=3000) is the agent's address, upstream.url "http://127.0.0.1:3000": every call would come back to the sidecar; $PORT is the sidecar's port, not the agent's: unset it or give --listen`},
		{"127.0.0.1:3000", "--listen", `the agent_platform listener 127.0.0.1:3000 (from --listen) is the agent's address, upstream.url "http://127.0.0.1:3000": every call would come back to the sidecar`},
		{"127.0.0.1:3001", "$PORT=3001", ""},
		{"10.0.0.5:3000", "--listen", ""},
	}
	for _, tt := range tests {
		err := c.CheckListen(tt.addr, tt.from)
		if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
			t.Errorf("CheckListen(%q, %q) = %v, want %q", tt.addr, tt.from, err, tt.want)
		}
	}
}
