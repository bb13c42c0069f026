package config

import (
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PresetADK is the preset that serves AdkApp's methods in front of an ADK
// api server.
const PresetADK = "adk"

// ADKMethods are AdkApp's 13 class methods, in the order the preset adds
// them, with the api_mode and the handler of each.
var ADKMethods = []struct {
	Name    string
	Mode    Mode
	Handler string
}{
	{"create_session", ModeSync, "adk.create_session"},
	{"async_create_session", ModeAsync, "adk.create_session"},
	{"get_session", ModeSync, "adk.get_session"},
	{"async_get_session", ModeAsync, "adk.get_session"},
	{"list_sessions", ModeSync, "adk.list_sessions"},
	{"async_list_sessions", ModeAsync, "adk.list_sessions"},
	{"delete_session", ModeSync, "adk.delete_session"},
	{"async_delete_session", ModeAsync, "adk.delete_session"},
	{"async_add_session_to_memory", ModeAsync, "adk.add_session_to_memory"},
	{"async_search_memory", ModeAsync, "adk.search_memory"},
	{"stream_query", ModeStream, "adk.stream_query"},
	{"async_stream_query", ModeAsyncStream, "adk.async_stream_query"},
	{"streaming_agent_run_with_events", ModeAsyncStream, "adk.streaming_agent_run_with_events"},
}

// handlerModes maps every handler to the mode it serves by default.
var handlerModes = func() map[string]Mode {
	m := map[string]Mode{}
	for _, am := range ADKMethods {
		if _, ok := m[am.Handler]; !ok {
			m[am.Handler] = am.Mode
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
	for _, am := range ADKMethods {
		if slices.Contains(declared, am.Name) {
			continue
		}
		c.Methods = append(c.Methods, &Method{
			Name: am.Name, Mode: am.Mode, Handler: am.Handler,
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
