package config

import (
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Dialect is the stream dialect a method's agent speaks, for the mapping
// stage (package dialect).
type Dialect string

// The dialects. DialectAuto detects it from the reply.
const (
	DialectAuto            Dialect = "auto"
	DialectRaw             Dialect = "raw"
	DialectVercelUI        Dialect = "vercel-ui"
	DialectOpenAIChat      Dialect = "openai-chat"
	DialectOpenAIResponses Dialect = "openai-responses"
	DialectOpenAIAgents    Dialect = "openai-agents"
	DialectLangGraph       Dialect = "langgraph"
	DialectAGUI            Dialect = "ag-ui"
	DialectA2A             Dialect = "a2a"
	DialectADK             Dialect = "adk"
)

// Emit is what the mapping stage writes to the caller.
type Emit string

// The emit values. EmitRaw passes the agent's records through unchanged.
const (
	EmitRaw  Emit = "raw"
	EmitText Emit = "text"
	EmitADK  Emit = "adk"
)

var (
	dialects = []string{string(DialectAuto), string(DialectRaw), string(DialectVercelUI), string(DialectOpenAIChat),
		string(DialectOpenAIResponses), string(DialectOpenAIAgents), string(DialectLangGraph), string(DialectAGUI), string(DialectA2A), string(DialectADK)}
	emits = []string{string(EmitRaw), string(EmitText), string(EmitADK)}
)

// Emits are the emit values, in the order messages list them: a table
// test of every emit mode reads them here.
func Emits() []Emit {
	l := make([]Emit, len(emits))
	for i, e := range emits {
		l[i] = Emit(e)
	}
	return l
}

// dialectKey decodes a method's dialect key and returns its line, for
// checkDialect.
func (p *parser) dialectKey(e entry, key string, m *Method) int {
	if s, ok := p.scalar(e, key); ok {
		if !slices.Contains(dialects, s) {
			p.addf(e.val.Line, key, "unknown dialect %q (want %s)", s, oneOf(dialects, true))
		}
		m.Dialect = Dialect(s)
	}
	return e.key.Line
}

// emitKey decodes a method's emit key.
func (p *parser) emitKey(e entry, key string, m *Method) {
	if s, ok := p.scalar(e, key); ok {
		if !slices.Contains(emits, s) {
			p.addf(e.val.Line, key, "unknown emit %q (want %s)", s, oneOf(emits, true))
		}
		m.Emit = Emit(s)
	}
}

// checkDialect rejects a dialect that cannot matter: with emit raw (the
// default) the records pass through as the agent sent them, whatever its
// dialect. A dialect that is no dialect has its own problem already: one
// is enough.
func (p *parser) checkDialect(m *Method, path string, dialectLine int) {
	known := slices.Contains(dialects, string(m.Dialect))
	if m.Emitting() == EmitRaw && dialectLine > 0 && known && m.Dialect != DialectAuto && m.Dialect != DialectRaw {
		p.addf(dialectLine, join(path, "dialect"), "dialect %q has no effect with emit: raw (the records pass through as the agent sent them); set emit: text or adk, or remove dialect", m.Dialect)
	}
}

// methodHeaders decodes a method's own headers: set only (forward is the
// top level's).
func (p *parser) methodHeaders(n *yaml.Node, path string, m *Method) {
	var h Headers
	p.headers(n, path, &h)
	if len(h.Forward) > 0 {
		p.addf(n.Line, join(path, "forward"), "applies to the top-level headers only")
	}
	m.Headers = h.Set
	m.HeaderTemplates = h.SetTemplates
}

// dialectNodes are a method's dialect, emit and headers for --print.
func dialectNodes(m *Method, n *yaml.Node) {
	if m.Dialect != "" {
		n.Content = append(n.Content, scalar("dialect"), scalar(string(m.Dialect)))
	}
	if m.Emit != "" {
		n.Content = append(n.Content, scalar("emit"), scalar(string(m.Emit)))
	}
	if len(m.HeaderTemplates) > 0 {
		set := mapping()
		for _, name := range slices.Sorted(maps.Keys(m.HeaderTemplates)) {
			set.Content = append(set.Content, scalar(name), quoted(m.HeaderTemplates[name]))
		}
		n.Content = append(n.Content, scalar("headers"), mapping("set", set))
	}
}

// Emitting is the method's emit value, its default filled in.
func (m *Method) Emitting() Emit {
	if m.Emit == "" {
		return EmitRaw
	}
	return m.Emit
}

// Speaking is the method's dialect, its default filled in.
func (m *Method) Speaking() Dialect {
	if m.Dialect == "" {
		return DialectAuto
	}
	return m.Dialect
}
