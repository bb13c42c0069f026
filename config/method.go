package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// methodDraft is a decoded method whose timeouts still wait for the
// top-level ones, which the file may list after the methods.
type methodDraft struct {
	m        *Method
	timeouts timeoutSet
}

var (
	modes   = []string{string(ModeSync), string(ModeAsync), string(ModeStream), string(ModeAsyncStream)}
	replies = []string{string(ReplyAuto), string(ReplyJSON), string(ReplySSE), string(ReplyNDJSON), string(ReplyText)}
	outputs = []string{string(OutputWrap), string(OutputAsIs)}
	verbs   = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
)

// methods decodes the methods mapping, in file order.
func (p *parser) methods(e entry) []methodDraft {
	const want = "a mapping of class_method names to methods"
	if !p.mapping(e.val, e.name, want) {
		if isNull(e.val) {
			p.addf(e.key.Line, e.name, "no methods (want %s, at least one)", want)
		}
		return nil
	}
	if len(e.val.Content) == 0 {
		p.addf(e.val.Line, e.name, "no methods (want %s, at least one)", want)
	}
	entries := p.entries(e.val, e.name)
	var out []methodDraft
	for _, f := range entries {
		path := join(e.name, f.name)
		if f.name != "*" && !isIdent(f.name) {
			p.addf(f.key.Line, path, `invalid class_method name (want letters, digits and "_", not starting with a digit; or "*" for every other name)`)
		}
		out = append(out, p.method(f, path))
	}
	return out
}

// method decodes one method; a null or empty value takes every default.
func (p *parser) method(e entry, path string) methodDraft {
	m := &Method{
		Name:   e.name,
		Body:   BodyInput,
		Reply:  ReplyAuto,
		Output: OutputWrap,
		Line:   e.key.Line,
	}
	d := methodDraft{m: m}
	var modeSet, callSet, bodySet bool
	var outputLine, handlerLine, dialectLine int
	var shapeKeys []string // keys a handler replaces
	if p.mapping(e.val, path, "a mapping of mode, call, body, reply, output and timeouts (or nothing, for all defaults)") {
		for _, f := range p.entries(e.val, path) {
			key := join(path, f.name)
			switch f.name {
			case "mode":
				if s, ok := p.scalar(f, key); ok {
					modeSet = true
					if s == "bidi_stream" {
						// The platform's bidi route is a WebSocket-style
						// exchange the sidecar does not speak.
						p.addf(f.val.Line, key, "bidi streaming is not supported (want %s)", oneOf(modes, true))
					} else if s != string(ModeBidi) && !slices.Contains(modes, s) {
						p.addf(f.val.Line, key, "unknown mode %q (want %s)", s, oneOf(modes, true))
					}
					m.Mode = Mode(s)
				}
			case "handler":
				if s, ok := p.scalar(f, key); ok {
					handlerLine = f.key.Line
					if _, known := handlerModes[s]; !known {
						p.addf(f.val.Line, key, "unknown handler %q (want %s)", s, oneOf(handlerNames(), true))
					}
					m.Handler = s
				}
			case "call":
				shapeKeys = append(shapeKeys, f.name)
				if s, ok := p.scalar(f, key); ok {
					callSet = true
					if err := m.setCall(s); err != nil {
						p.addf(f.val.Line, key, "%v", err)
					}
				}
			case "body":
				shapeKeys = append(shapeKeys, f.name)
				bodySet = p.body(f.val, key, m)
			case "reply":
				shapeKeys = append(shapeKeys, f.name)
				if s, ok := p.scalar(f, key); ok {
					if !slices.Contains(replies, s) {
						p.addf(f.val.Line, key, "unknown reply %q (want %s)", s, oneOf(replies, true))
					}
					m.Reply = Reply(s)
				}
			case "output":
				shapeKeys = append(shapeKeys, f.name)
				if s, ok := p.scalar(f, key); ok {
					outputLine = f.key.Line
					if !slices.Contains(outputs, s) {
						p.addf(f.val.Line, key, "unknown output %q (want %s)", s, oneOf(outputs, true))
					}
					m.Output = Output(s)
				}
			case "timeouts":
				d.timeouts = p.timeouts(f.val, key)
			case "idempotent":
				if s, ok := p.scalar(f, key); ok {
					switch s {
					case "true":
						m.Idempotent = true
					case "false":
					default:
						p.addf(f.val.Line, key, "%q is not true or false", s)
					}
				}
			case "description":
				p.description(f, key, m)
			case "parameters":
				p.parameters(f, key, m)
			case "example":
				m.Example = p.jsonValue(f.val, key, 0, false, nil)
			case "dialect":
				dialectLine = p.dialectKey(f, key, m)
			case "emit":
				p.emitKey(f, key, m)
			case "headers":
				shapeKeys = append(shapeKeys, f.name) // a handler's requests are its own
				p.methodHeaders(f.val, key, m)
			case "scopes":
				p.scopes(f, key, m)
			default:
				p.unknown(f, path, "mode", "call", "body", "reply", "output", "timeouts", "handler", "idempotent", "description", "parameters", "example", "dialect", "emit", "headers", "scopes")
			}
		}
	}

	if m.Handler != "" {
		if m.Name == "*" {
			p.addf(handlerLine, join(path, "handler"), `a "*" method cannot have a handler`)
		}
		for _, k := range shapeKeys {
			p.addf(handlerLine, join(path, k), "does not apply to a method with a handler (%s builds its own requests)", m.Handler)
		}
		if want, ok := handlerModes[m.Handler]; ok && !modeSet {
			m.Mode = want // the handler's natural mode, unless the file says otherwise
		} else if ok && want == ModeBidi && m.Mode != ModeBidi {
			p.addf(handlerLine, join(path, "mode"), "%s serves conversations only (want mode: bidi, or none)", m.Handler)
		}
	}
	m.AllRoutes = m.Name == "*" && !modeSet
	if m.Mode == ModeBidi {
		p.checkBidi(e, path, m, callSet)
		return d
	}
	p.checkDialect(m, path, dialectLine)
	if outputLine > 0 && !m.AllRoutes && m.Mode.Streaming() {
		p.addf(outputLine, join(path, "output"), "applies to unary methods only (mode %q is served on /api/stream_reasoning_engine)", m.Mode)
	}
	if m.Handler != "" {
		m.Body = BodyNone // the handler builds its own requests
	} else if !callSet {
		if m.Name == "*" {
			_ = m.setCall("POST /{class_method}")
		} else {
			m.Verb, m.Path, m.Segments = "POST", "/"+m.Name, []PathSegment{{Literal: "/" + m.Name}}
		}
	}
	// A GET or DELETE body has no defined meaning (RFC 9110, sections
	// 9.3.1 and 9.3.5) and some servers refuse one: send none unless the
	// method asks for it.
	if !bodySet && (m.Verb == "GET" || m.Verb == "DELETE") {
		m.Body = BodyNone
	}
	return d
}

// setCall parses "VERB /path/{field}?k={field}" into Verb, Path, Segments
// and Query.
func (m *Method) setCall(s string) error {
	f := strings.Fields(s)
	if len(f) != 2 {
		return fmt.Errorf("%q is not \"VERB /path\" (e.g. \"POST /query/{user_id}\")", s)
	}
	verb := strings.ToUpper(f[0])
	if !slices.Contains(verbs, verb) {
		return fmt.Errorf("unknown verb %q (want %s)", f[0], oneOf(verbs, false))
	}
	path, query, hasQuery := strings.Cut(f[1], "?")
	segs, err := parsePath(f[1], path, false)
	if err != nil {
		return err
	}
	var qsegs []PathSegment
	if hasQuery {
		if query == "" {
			return fmt.Errorf("path %q: empty query after \"?\" (want ?name=value or ?name={field})", f[1])
		}
		if qsegs, err = parsePath(f[1], query, true); err != nil {
			return err
		}
	}
	m.Verb, m.Path, m.Segments, m.Query = verb, f[1], segs, qsegs
	return nil
}

// parsePath splits the path or the query (query) of call path whole at
// their {field} placeholders. A literal may hold only what a path or query
// may carry unescaped (RFC 3986 pchar, "%" excepted; a query also "?"), so
// it means the same decoded and on the wire. A path starts with "/" or
// with {route}, which is a whole path itself.
func parsePath(whole, path string, query bool) ([]PathSegment, error) {
	if !query && !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "{"+FieldRoute+"}") {
		return nil, fmt.Errorf("path %q must start with \"/\" (or {%s})", whole, FieldRoute)
	}
	var segs []PathSegment
	start := 0 // of the current literal
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '{':
			end := strings.IndexAny(path[i+1:], "{}")
			if end < 0 || path[i+1+end] == '{' {
				return nil, fmt.Errorf("path %q: unbalanced \"{\" (want {field})", whole)
			}
			field := path[i+1 : i+1+end]
			if field == "" {
				return nil, fmt.Errorf("path %q: empty {} (want {field})", whole)
			}
			if !isField(field) {
				return nil, fmt.Errorf("path %q: invalid field {%s} (want {name} or {a.b}: names of letters, digits and \"_\")", whole, field)
			}
			if start < i {
				segs = append(segs, PathSegment{Literal: path[start:i]})
			}
			segs = append(segs, PathSegment{Field: field})
			i += end + 1
			start = i + 1
		case c == '}':
			return nil, fmt.Errorf("path %q: unbalanced \"}\" (want {field})", whole)
		case c == '#':
			return nil, fmt.Errorf("path %q: %q is not allowed (no fragment)", whole, c)
		case query && c == '?':
		case !isPathChar(c):
			r, _ := utf8.DecodeRuneInString(path[i:])
			allowed := pathChars
			if query {
				allowed += "?"
			}
			return nil, fmt.Errorf("path %q: %q is not allowed (want letters, digits, {field} and %s)", whole, r, allowed)
		}
	}
	if start < len(path) {
		segs = append(segs, PathSegment{Literal: path[start:]})
	}
	return segs, nil
}

// isPathChar reports whether c may stand unescaped in a path literal.
func isPathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte(pathChars, c) >= 0
}

// pathChars are the characters besides letters and digits a path literal
// may hold.
const pathChars = "-._~!$&'()*+,;=:@/"

// isIdent reports whether s is [A-Za-z_][A-Za-z0-9_]*.
func isIdent(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// isField reports whether s is an input field path: identifiers joined by
// dots, "a" or "a.b".
func isField(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !isIdent(part) {
			return false
		}
	}
	return true
}

// body decodes what the agent receives and reports whether the file set
// it. A mapping or a list is a template; so is a string that starts with
// "{" or "[", read as JSON.
func (p *parser) body(n *yaml.Node, path string, m *Method) bool {
	const want = `want "input", "envelope", "none", or a template: a mapping, a list, or a JSON string`
	switch {
	case isNull(n):
		return false
	case n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode:
		m.Body, m.Template = BodyTemplate, p.template(n, path)
		return true
	case n.Kind != yaml.ScalarNode:
		p.addf(n.Line, path, "%s, not a %s", want, kindName(n))
		return true
	}
	switch s := n.Value; {
	case s == string(BodyInput), s == string(BodyEnvelope), s == string(BodyNone):
		m.Body = BodyKind(s)
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		if _, ok := inputRef(s); ok {
			p.addf(n.Line, path, "%q is not JSON (want body: input for the whole input, or the leaf inside a template: {x: %q})", s, s)
			return true
		}
		t, err := jsonTemplate(s)
		if err == nil {
			err = checkRefs(t, "")
		}
		if err != nil {
			p.addf(n.Line, path, "%v", err)
			return true
		}
		m.Body, m.Template = BodyTemplate, t
	default:
		p.addf(n.Line, path, "unknown body %q (%s)", s, want)
	}
	return true
}
