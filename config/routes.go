package config

import (
	"fmt"
	"slices"
)

// route is what one inbound route serves.
type route struct {
	byName   map[string]*Method
	names    []string // in file order, "*" left out
	wildcard *Method  // serves names not listed, or nil
}

// routeOf indexes Config.routes.
func routeOf(stream bool) int {
	if stream {
		return 1
	}
	return 0
}

// serves reports whether m is served on the streaming (stream) or the
// unary route.
func (m *Method) serves(stream bool) bool {
	if m.Mode == ModeBidi {
		return false // a conversation: only the doors that converse reach it (Bidi)
	}
	return m.AllRoutes || m.Mode.Streaming() == stream
}

// index builds the per-route lookup tables from Methods.
func (c *Config) index() {
	for _, stream := range []bool{false, true} {
		r := route{byName: make(map[string]*Method)}
		for _, m := range c.Methods {
			switch {
			case !m.serves(stream):
			case m.Name == "*":
				r.wildcard = m
			default:
				r.byName[m.Name] = m
				r.names = append(r.names, m.Name)
			}
		}
		c.routes[routeOf(stream)] = r
	}
}

// Lookup returns the method serving class_method name on the streaming
// route (stream) or the unary one: the method of that name when it serves
// that route, else "*" when it serves that route, else nil.
func (c *Config) Lookup(name string, stream bool) *Method {
	r := &c.routes[routeOf(stream)]
	if m, ok := r.byName[name]; ok {
		return m
	}
	return r.wildcard
}

// RouteMethods returns the names served on the streaming route (stream) or
// the unary one, in file order, without "*". It is meant for "not found"
// messages; the slice is the caller's.
func (c *Config) RouteMethods(stream bool) []string {
	return slices.Clone(c.routes[routeOf(stream)].names)
}

// Summary is the line `sidecar validate` prints for a valid file, e.g.
// "sidecar.yaml: ok: 3 methods (2 unary, 1 streaming), upstream unix:///run/agent.sock".
// A "*" method is not counted among the methods but named with its routes;
// bidi methods, when there are any, are counted apart ("1 bidi").
func (c *Config) Summary(name string) string {
	var unary, streaming, bidi int
	var wildcard *Method
	for _, m := range c.Methods {
		switch {
		case m.Name == "*":
			wildcard = m
		case m.Mode == ModeBidi:
			bidi++
		case m.Mode.Streaming():
			streaming++
		default:
			unary++
		}
	}
	noun := "methods"
	if unary+streaming+bidi == 1 {
		noun = "method"
	}
	s := fmt.Sprintf("%s: ok: %d %s (%d unary, %d streaming", name, unary+streaming+bidi, noun, unary, streaming)
	if bidi > 0 {
		s += fmt.Sprintf(", %d bidi", bidi)
	}
	s += ")"
	switch {
	case wildcard == nil:
	case wildcard.AllRoutes:
		s += `, "*" on both routes`
	case wildcard.Mode.Streaming():
		s += `, "*" on the streaming route`
	default:
		s += `, "*" on the unary route`
	}
	return s + ", upstream " + c.Upstream.URL
}
