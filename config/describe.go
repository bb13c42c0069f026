package config

// The method keys that only describe a method to the platform's SDK,
// description and parameters: package deploy puts them in the deploy
// request's spec.classMethods; they change nothing about how a call is
// served. So does example, an input that sidecar dev's playground shows.

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
	v, ok := p.jsonValue(e.val, path, 0, false, nil).(map[string]any)
	if !ok {
		return
	}
	if t, set := v["type"]; set && t != "object" {
		p.addf(e.val.Line, path, "type %v: the parameters of a method are an object (type: object)", t)
		return
	}
	m.Parameters = v
}
