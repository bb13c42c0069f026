package config

import (
	"net/netip"
	"strings"
)

// trustedHosts decodes trusted_hosts: a list of DNS names (or IP
// addresses), each without scheme, port or path, kept in lower case.
func (p *parser) trustedHosts(e entry) []string {
	list, ok := Decoder{p}.Strings(Entry{Name: e.name, Key: e.key, Value: e.val}, e.name, "host names")
	if !ok {
		return nil
	}
	for i, h := range list {
		if !hostName(h) {
			p.addf(e.val.Content[i].Line, e.name, "%q is not a host name (want a name such as agents.example.com: no scheme, port, path or wildcard)", h)
			return nil
		}
		list[i] = strings.ToLower(h)
	}
	return list
}

// hostName reports whether s is a DNS name (letters, digits, hyphens and
// dots, each label 1 to 63 long, 253 at most) or an IP address.
func hostName(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// trustedProxies decodes trusted_proxies: a list of IP addresses or CIDR
// prefixes (10.0.0.0/8, ::1), the peers whose X-Forwarded-* headers a door
// believes.
func (p *parser) trustedProxies(e entry) []netip.Prefix {
	list, ok := Decoder{p}.Strings(Entry{Name: e.name, Key: e.key, Value: e.val}, e.name, "addresses or CIDR prefixes")
	if !ok {
		return nil
	}
	var prefixes []netip.Prefix
	for i, s := range list {
		pre, err := netip.ParsePrefix(s)
		if addr, aerr := netip.ParseAddr(s); err != nil && aerr == nil && addr.Zone() == "" {
			pre, err = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()), nil
		}
		if err != nil {
			p.addf(e.val.Content[i].Line, e.name, "%q is not an IP address or CIDR prefix (want e.g. 10.0.0.0/8 or 192.168.1.7)", s)
			return nil
		}
		prefixes = append(prefixes, pre.Masked())
	}
	return prefixes
}
