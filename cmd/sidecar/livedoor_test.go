package main

import (
	"net"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestLiveDoorListed: sidecar dev's list of doors shows the live door
// mounted on the platform's port at its mount, directly and through the
// dev listener's passthrough, and on its own listener at its root.
func TestLiveDoorListed(t *testing.T) {
	for _, tt := range []struct {
		section, url string
		mounted      bool
	}{
		{`{mount: /live, method: talk}`, "http://127.0.0.1:8080/live", true},
		{`{listen: "127.0.0.1:8082", method: talk, framing: raw}`, "http://127.0.0.1:8082", false},
	} {
		cfg, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  talk: {mode: bidi, call: GET /live}\nprotocols:\n  live: "+tt.section+"\n"), doors.Kinds(doors.All)...)
		if err != nil {
			t.Fatal(err)
		}
		listed := devDoors(cfg, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8081", func(string) string { return "" })
		var found bool
		for _, d := range listed {
			if d.Protocol != "live" {
				continue
			}
			found = true
			if d.URL != tt.url || tt.mounted != strings.HasSuffix(d.Passthrough, "/live") {
				t.Errorf("%s: listed at %q, passthrough %q; want %q, a passthrough ending in /live: %v", tt.section, d.URL, d.Passthrough, tt.url, tt.mounted)
			}
		}
		if !found {
			t.Errorf("%s: dev's doors %+v do not list the live door", tt.section, listed)
		}
	}
}
