package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The method keys that only describe a method to the platform's SDK: they
// go into the deploy request's spec.classMethods and change nothing about
// how a call is served.

// maxDescription bounds a method's description (the SDK makes it the
// method's docstring).
const maxDescription = 16 << 10

// description decodes a method's description: one string.
func (p *parser) description(e entry, path string, m *Method) {
	s, ok := p.scalar(e, path)
	if !ok {
		return
	}
	if len(s) > maxDescription {
		p.addf(e.val.Line, path, "longer than %d bytes", maxDescription)
		return
	}
	m.Description = s
}

// parameters decodes a method's parameters: an OpenAPI schema object, as
// AdkApp's methods declare theirs (type object, properties, required).
func (p *parser) parameters(e entry, path string, m *Method) {
	if !p.mapping(e.val, path, "an OpenAPI schema mapping (type: object, properties: …, required: […])") {
		return
	}
	v, ok := p.schemaValue(e.val, path, 0).(map[string]any)
	if !ok {
		return
	}
	if t, set := v["type"]; set && t != "object" {
		p.addf(e.val.Line, path, "type %v: the parameters of a method are an object (type: object)", t)
		return
	}
	m.Parameters = v
}

// schemaValue turns YAML into JSON-ready Go values, strings as written
// (no {input.x} references here).
func (p *parser) schemaValue(n *yaml.Node, path string, depth int) any {
	n = resolve(n)
	if depth > maxDepth {
		p.addf(n.Line, path, "nested deeper than %d levels", maxDepth)
		return nil
	}
	if !p.spend() {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		obj := make(map[string]any, len(n.Content)/2)
		for _, e := range p.entries(n, path) {
			obj[e.name] = p.schemaValue(e.val, join(path, e.name), depth+1)
		}
		return obj
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			list = append(list, p.schemaValue(e, fmt.Sprintf("%s[%d]", path, i), depth+1))
		}
		return list
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" {
			return n.Value
		}
		v, err := scalarValue(n)
		if err != nil {
			p.addf(n.Line, path, "%v", err)
		}
		return v
	}
	p.addf(n.Line, path, "unsupported YAML node")
	return nil
}
