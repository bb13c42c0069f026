package config

import (
	"strings"
	"testing"
)

// TestSelfLoop: an upstream.url that is the sidecar's own listen address
// (or $PORT's) on a loopback or unspecified host is a config error, with
// its line; other ports and hosts are not.
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
		{"", "http://127.0.0.1:8001", "8001", true}, // $PORT wins over listen
		{"", "http://127.0.0.1:8080", "8001", false},
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
