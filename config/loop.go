package config

import (
	"net"
	"strings"
)

// loopsBack reports whether an agent at upstream (host:port) is the
// sidecar's own listener at listen: the same port, on a loopback or
// unspecified address that listen serves. An address that may be the
// machine's own but does not say so (a LAN IP, a host name) is not
// judged; the hop header catches those at run time.
func loopsBack(upstream, listen string) bool {
	uh, _, err := net.SplitHostPort(upstream)
	if err != nil {
		return false
	}
	lh, _, err := net.SplitHostPort(listen)
	if err != nil || !samePort(upstream, listen) {
		return false
	}
	switch {
	case !isLocal(uh):
		return false
	case lh == "" || isUnspecified(lh):
		return true // every interface, loopback included
	case isUnspecified(uh):
		return isLocal(lh) // connecting to 0.0.0.0 reaches the loopback
	}
	for _, a := range hostIPs(uh) {
		for _, b := range hostIPs(lh) {
			if a.Equal(b) {
				return true
			}
		}
	}
	return false
}

// hostIPs are the addresses host stands for: itself, or the loopback
// addresses for "localhost".
func hostIPs(host string) []net.IP {
	if strings.EqualFold(host, "localhost") {
		return []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	return []net.IP{net.ParseIP(host)}
}

// isLocal reports whether host names this machine by a loopback or
// unspecified address (connecting to 0.0.0.0 reaches the local host).
func isLocal(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

func isUnspecified(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
