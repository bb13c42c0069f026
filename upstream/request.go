package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// InputError is a call whose input cannot fill the method's request: a
// path field that is missing or not a scalar. It is the caller's fault.
type InputError struct {
	Field string
	Msg   string
}

func (e *InputError) Error() string { return fmt.Sprintf("input.%s: %s", e.Field, e.Msg) }

// Input is a call's input object with each field's JSON kept byte-exact, so
// large integers and the agent's own key order survive.
type Input struct {
	Raw    json.RawMessage            // the whole object, compact
	Fields map[string]json.RawMessage // its top-level fields
	// Route is the inbound route the call came on, for a {route} in the
	// method's path; "" means the route of the method's mode.
	Route string
}

// MaxFields is how many top-level fields ParseInput indexes: an input
// with more is refused, so indexing a caller's input costs at most this
// many map entries whatever its size (the values are not copied).
const MaxFields = 10000

// ParseInput checks that raw is a JSON object and indexes its top-level
// fields. The values are slices of raw.
func ParseInput(raw json.RawMessage) (Input, error) {
	if !json.Valid(raw) {
		return Input{}, fmt.Errorf("input must be a JSON object")
	}
	fields := make(map[string]json.RawMessage)
	tooMany := false
	ok := Members(raw, func(key, value []byte) bool {
		if len(fields) == MaxFields {
			tooMany = true
			return false
		}
		fields[Key(key)] = value // the last of duplicate keys wins, as in encoding/json
		return true
	})
	if tooMany {
		return Input{}, fmt.Errorf("input has more than %d top-level fields", MaxFields)
	}
	if !ok {
		return Input{}, fmt.Errorf("input must be a JSON object")
	}
	return Input{Raw: raw, Fields: fields}, nil
}

// ReadsFields reports whether serving m reads single fields of the input
// (a path field, a body template, a built-in handler), so the input must
// be indexed with ParseInput; otherwise Input{Raw: …} is all it needs.
func ReadsFields(m *config.Method) bool {
	if m.Handler != "" || m.Body == config.BodyTemplate {
		return true
	}
	for _, segs := range [2][]config.PathSegment{m.Segments, m.Query} {
		for _, seg := range segs {
			if seg.Field != "" && seg.Field != config.FieldClassMethod && seg.Field != config.FieldRoute {
				return true
			}
		}
	}
	return false
}

// lookup finds a dotted field path ("a.b") in the input.
func (in Input) lookup(path string) (json.RawMessage, bool) {
	name, rest, nested := strings.Cut(path, ".")
	v, ok := in.Fields[name]
	for ok && nested {
		// The object is searched, not indexed: its size costs no memory.
		obj := v
		name, rest, nested = strings.Cut(rest, ".")
		v, ok = nil, false
		Members(obj, func(key, value []byte) bool {
			if KeyIs(key, name) {
				v, ok = value, true // the last of duplicate keys wins
			}
			return true
		})
	}
	if ok && string(v) == "null" {
		return nil, false
	}
	return v, ok
}

// buildPath fills the method's path template and query. Each path value is
// escaped so it stays inside its one segment: "/", "?", "#", "%" and
// control characters are percent-encoded, and a value that is "." or ".."
// is refused (fieldValue), as agents that decode %2E before normalising
// would climb out of the segment. {route} is the inbound route, a path of the sidecar's own, as
// it is. Each query value is escaped as one query component ("&", "=",
// "+", "#" encoded). It returns the decoded path, its escaped form for
// url.URL's Path and RawPath, and the escaped query ("" for none).
func buildPath(m *config.Method, name string, in Input) (path, raw, query string, err error) {
	var p, r, q strings.Builder
	for _, seg := range m.Segments {
		if seg.Field == "" {
			p.WriteString(seg.Literal)
			r.WriteString(seg.Literal)
			continue
		}
		if seg.Field == config.FieldRoute {
			route := routeOf(m, in)
			p.WriteString(route)
			r.WriteString(route)
			continue
		}
		v, err := fieldValue(m, name, in, seg.Field, false)
		if err != nil {
			return "", "", "", err
		}
		p.WriteString(v)
		r.WriteString(escapeSegment(v))
	}
	for _, seg := range m.Query {
		if seg.Field == "" {
			q.WriteString(seg.Literal)
			continue
		}
		v, err := fieldValue(m, name, in, seg.Field, true)
		if err != nil {
			return "", "", "", err
		}
		q.WriteString(url.QueryEscape(v))
	}
	return p.String(), r.String(), q.String(), nil
}

// routeOf is the route a call came on: the one the proxy says, else the
// one the method's mode is served on.
func routeOf(m *config.Method, in Input) string {
	switch {
	case in.Route != "":
		return in.Route
	case m.Mode.Streaming():
		return config.RouteStream
	}
	return config.RouteUnary
}

// fieldValue is the text that fills a {field} of the path or, for
// query, of the query string.
func fieldValue(m *config.Method, name string, in Input, field string, query bool) (string, error) {
	switch field {
	case config.FieldClassMethod:
		return name, nil
	case config.FieldRoute:
		return routeOf(m, in), nil
	}
	part, fills := "path", "a path segment"
	if query {
		part, fills = "query", "a query parameter"
	}
	v, ok := in.lookup(field)
	if !ok {
		return "", &InputError{Field: field, Msg: "is required by this method's " + part}
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", &InputError{Field: field, Msg: "is not a valid string"}
		}
		if s == "" && !query {
			return "", &InputError{Field: field, Msg: "must not be empty: it fills " + fills}
		}
		if (s == "." || s == "..") && !query {
			// Escaped as %2E it stays one segment here, but agents that
			// normalise %2E%2E (node's new URL(), browsers) would climb.
			return "", &InputError{Field: field, Msg: "must not be \".\" or \"..\": it fills " + fills}
		}
		return s, nil
	case '{', '[':
		return "", &InputError{Field: field, Msg: "must be a string, number or boolean: it fills " + fills}
	default: // number or boolean: its JSON text, byte-exact
		return string(v), nil
	}
}

func escapeSegment(v string) string {
	if v == "." || v == ".." {
		return strings.Repeat("%2E", len(v))
	}
	return url.PathEscape(v)
}

// buildBody is the request body for one call, or nil for none.
func buildBody(m *config.Method, name string, in Input) ([]byte, error) {
	switch m.Body {
	case config.BodyNone:
		return nil, nil
	case config.BodyEnvelope:
		var b bytes.Buffer
		b.WriteString(`{"class_method":`)
		n, _ := json.Marshal(name)
		b.Write(n)
		b.WriteString(`,"input":`)
		b.Write(in.Raw)
		b.WriteByte('}')
		return b.Bytes(), nil
	case config.BodyTemplate:
		var b bytes.Buffer
		if _, err := fillTemplate(&b, m.Template, in); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	default:
		return in.Raw, nil
	}
}

// fillTemplate writes the template as JSON with every "{input…}" leaf
// replaced by that input value, its JSON type kept. A leaf whose field is
// missing (or null) is left out of its object, and is null inside an
// array. It reports whether it wrote anything.
func fillTemplate(b *bytes.Buffer, t any, in Input) (bool, error) {
	switch t := t.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		first := true
		for _, k := range keys {
			mark := b.Len()
			if !first {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			wrote, err := fillTemplate(b, t[k], in)
			if err != nil {
				return false, err
			}
			if !wrote {
				b.Truncate(mark)
				continue
			}
			first = false
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			wrote, err := fillTemplate(b, e, in)
			if err != nil {
				return false, err
			}
			if !wrote {
				b.WriteString("null")
			}
		}
		b.WriteByte(']')
	case string:
		if field, ok := templateField(t); ok {
			if field == "" {
				b.Write(in.Raw)
				return true, nil
			}
			v, ok := in.lookup(field)
			if !ok {
				return false, nil
			}
			b.Write(v)
			return true, nil
		}
		sb, _ := json.Marshal(t)
		b.Write(sb)
	default:
		vb, err := json.Marshal(t)
		if err != nil {
			return false, fmt.Errorf("encoding body template: %w", err)
		}
		b.Write(vb)
	}
	return true, nil
}

// templateField reports whether s is a substitution leaf: "{input}" (field
// "") or "{input.a.b}" (field "a.b").
func templateField(s string) (string, bool) {
	if s == "{input}" {
		return "", true
	}
	if strings.HasPrefix(s, "{input.") && strings.HasSuffix(s, "}") {
		return s[len("{input.") : len(s)-1], true
	}
	return "", false
}
