package config

import (
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
)

// PresetADK is the preset that serves AdkApp's methods (adkapp.Methods)
// in front of an ADK api server.
const PresetADK = "adk"

// handlerModes maps every adk.* handler to the mode it serves by default,
// that of its first row in adkapp.Methods.
var handlerModes = func() map[string]Mode {
	m := map[string]Mode{}
	for _, am := range adkapp.Methods {
		if _, ok := m[am.Handler]; !ok {
			m[am.Handler] = Mode(am.Mode)
		}
	}
	return m
}()

func handlerNames() []string {
	names := make([]string, 0, len(handlerModes))
	for n := range handlerModes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ServesADK reports whether the "adk.*" handlers serve a method: the ADK
// preset's, or one whose entry names a handler. Only then is the agent an
// ADK api server that must list adk.app to be ready: adk.app alone (the
// author of emit: adk events) says nothing of the agent's routes.
func (c *Config) ServesADK() bool {
	for _, m := range c.Methods {
		if m.Handler != "" {
			return true
		}
	}
	return false
}

// expandPreset adds the preset's methods the file did not declare.
func (c *Config) expandPreset() {
	if c.Preset != PresetADK {
		return
	}
	// Every ADK api server lists its apps once it has loaded them (the
	// TypeScript one answers /health before): that is readiness, and the
	// ADK handlers check that the list holds adk.app (adk.App.Ready).
	if c.Upstream.Ready.Path == "" {
		c.Upstream.Ready.Path = "/list-apps"
	}
	var declared []string
	for _, m := range c.Methods {
		declared = append(declared, m.Name)
	}
	var wildcard *Method
	if n := len(c.Methods); n > 0 && c.Methods[n-1].Name == "*" {
		wildcard, c.Methods = c.Methods[n-1], c.Methods[:n-1]
	}
	for _, am := range adkapp.Methods {
		if slices.Contains(declared, am.Name) {
			continue
		}
		c.Methods = append(c.Methods, &Method{
			Name: am.Name, Mode: Mode(am.Mode), Handler: am.Handler,
			Body: BodyNone, Reply: ReplyAuto, Output: OutputWrap, Timeouts: c.Timeouts,
		})
	}
	if wildcard != nil {
		c.Methods = append(c.Methods, wildcard)
	}
}

// adk decodes the adk mapping.
func (p *parser) adk(n *yaml.Node, path string, a *ADK) {
	if !p.mapping(n, path, "a mapping with app and keys") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "app":
			if s, ok := p.scalar(e, key); ok {
				if s == "" || strings.ContainsAny(s, "/?#") {
					p.addf(e.val.Line, key, "%q is not an ADK app name", s)
					continue
				}
				a.App = s
			}
		case "keys":
			if s, ok := p.scalar(e, key); ok {
				if s != "as_is" && s != "snake" {
					p.addf(e.val.Line, key, "unknown key case %q (want \"as_is\" or \"snake\")", s)
					continue
				}
				a.Keys = s
			}
		default:
			p.unknown(e, path, "app", "keys")
		}
	}
}
