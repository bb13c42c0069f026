package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// buildPath fills the method's path template and query. Each path value is
// escaped so it stays inside its one segment: "/", "?", "#", "%" and
// control characters are percent-encoded, and a value that is "." or "..",
// or holds one between "/", is refused (fieldValue), as agents that decode
// %2E, and proxies that decode %2F, before normalising would climb out of
// the segment. {route} is the inbound route, a path of the sidecar's own, as
// it is. Each query value is escaped as one query component ("&", "=",
// "+", "#" encoded). It returns the decoded path, its escaped form for
// url.URL's Path and RawPath, and the escaped query ("" for none).
func buildPath(m *config.Method, name string, in core.Input, route string) (path, raw, query string, err error) {
	var p, r, q strings.Builder
	for _, seg := range m.Segments {
		if seg.Field == "" {
			p.WriteString(seg.Literal)
			r.WriteString(seg.Literal)
			continue
		}
		if seg.Field == config.FieldRoute {
			route := routeOf(m, route)
			p.WriteString(route)
			r.WriteString(route)
			continue
		}
		v, err := fieldValue(m, name, in, route, seg.Field, false)
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
		v, err := fieldValue(m, name, in, route, seg.Field, true)
		if err != nil {
			return "", "", "", err
		}
		q.WriteString(url.QueryEscape(v))
	}
	return p.String(), r.String(), q.String(), nil
}

// Target is the path and query, escaped, that a call of m named name with
// input in on route requests (as buildPath fills them): where a
// conversation's agent WebSocket is dialled. A field missing from in, or
// cannot fill its place, is a *core.InputError.
func Target(m *config.Method, name string, in core.Input, route string) (string, error) {
	_, raw, query, err := buildPath(m, name, in, route)
	if err != nil {
		return "", err
	}
	if query != "" {
		raw += "?" + query
	}
	return raw, nil
}

// routeOf is the route a call came on: the one the front door says (a
// front door always says), else the contract's route of the method's mode.
func routeOf(m *config.Method, route string) string {
	switch {
	case route != "":
		return route
	case m.Mode.Streaming():
		return core.RouteStream
	}
	return core.RouteUnary
}

// fieldValue is the text that fills a {field} of the path or, for
// query, of the query string.
func fieldValue(m *config.Method, name string, in core.Input, route, field string, query bool) (string, error) {
	switch field {
	case config.FieldClassMethod:
		return name, nil
	case config.FieldRoute:
		return routeOf(m, route), nil
	}
	part, fills := "path", "a path segment"
	if query {
		part, fills = "query", "a query parameter"
	}
	v, ok := in.Lookup(field)
	if !ok {
		return "", &core.InputError{Field: field, Msg: "is required by this method's " + part}
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", &core.InputError{Field: field, Msg: "is not a valid string"}
		}
		if s == "" && !query {
			return "", &core.InputError{Field: field, Msg: "must not be empty: it fills " + fills}
		}
		if !query && DotSegments(s) {
			// Escaped (%2E, %2F) it stays one segment here, but agents
			// that normalise %2E%2E (node's new URL(), browsers), and
			// proxies that decode %2F before passing the path on (nginx
			// with a proxy_pass URI), would climb.
			return "", &core.InputError{Field: field, Msg: "must not be \".\" or \"..\", nor hold one between \"/\": it fills " + fills}
		}
		return s, nil
	case '{', '[':
		return "", &core.InputError{Field: field, Msg: "must be a string, number or boolean: it fills " + fills}
	default: // number or boolean: its JSON text, byte-exact
		return string(v), nil
	}
}

// DotSegments reports whether v, split on "/", has a "." or ".." part: the
// value whole, or a part once a hop decodes %2F into "/".
func DotSegments(v string) bool {
	for part := range strings.SplitSeq(v, "/") {
		if part == "." || part == ".." {
			return true
		}
	}
	return false
}

func escapeSegment(v string) string {
	if v == "." || v == ".." {
		return strings.Repeat("%2E", len(v))
	}
	return url.PathEscape(v)
}

// buildBody is the request body for one call, or nil for none.
func buildBody(m *config.Method, name string, in core.Input) ([]byte, error) {
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
func fillTemplate(b *bytes.Buffer, t any, in core.Input) (bool, error) {
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
			v, ok := in.Lookup(field)
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
