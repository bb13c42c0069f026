package mcp

import (
	"encoding/json"

	"github.com/sidecar-dev/sidecar/config"
)

// tool is one method of the map served as a tool.
type tool struct {
	name   string
	method *config.Method // the entry serving it
	stream bool           // it streams: answered on SSE, its text through the dialect stage
}

// methodOf is the entry serving name: the one of that name, else "*"
// (streaming first).
func methodOf(cfg *config.Config, name string) *config.Method {
	for _, m := range cfg.Methods {
		if m.Name == name {
			return m
		}
	}
	if m := cfg.Lookup(name, true); m != nil {
		return m
	}
	return cfg.Lookup(name, false)
}

// appendTool appends the tools/list entry of method m called name: its
// description, and its parameters as the input schema (an object schema;
// none or another type: any object).
func appendTool(b []byte, name string, m *config.Method) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, name)
	if m.Description != "" {
		b = append(b, `,"description":`...)
		b = appendString(b, m.Description)
	}
	b = append(b, `,"inputSchema":`...)
	schema := []byte(`{"type":"object"}`)
	if m.Parameters != nil {
		t, typed := m.Parameters["type"]
		if !typed || t == "object" {
			p := m.Parameters
			if !typed {
				p = make(map[string]any, len(m.Parameters)+1)
				for k, v := range m.Parameters {
					p[k] = v
				}
				p["type"] = "object"
			}
			if s, err := json.Marshal(p); err == nil {
				schema = s
			}
		}
	}
	return append(append(b, schema...), '}')
}
