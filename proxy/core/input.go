package core

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// Input is a call's input object with each field's JSON kept byte-exact, so
// large integers and the agent's own key order survive.
type Input struct {
	Raw    json.RawMessage            // the whole object, compact
	Fields map[string]json.RawMessage // its top-level fields
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
	ok := rawjson.Members(raw, func(key, value []byte) bool {
		if len(fields) == MaxFields {
			tooMany = true
			return false
		}
		fields[rawjson.Key(key)] = value // the last of duplicate keys wins, as in encoding/json
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

// Lookup finds a dotted field path ("a.b") in the input; a null is not
// found.
func (in Input) Lookup(path string) (json.RawMessage, bool) {
	name, rest, nested := strings.Cut(path, ".")
	v, ok := in.Fields[name]
	for ok && nested {
		// The object is searched, not indexed: its size costs no memory.
		obj := v
		name, rest, nested = strings.Cut(rest, ".")
		v, ok = nil, false
		rawjson.Members(obj, func(key, value []byte) bool {
			if rawjson.KeyIs(key, name) {
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

// QueryInput is the input whose fields are the query parameters of q that
// m's path and query name ({field}), each a JSON string: how the
// conversation of a door whose upgrade carries no input fills its bidi
// method's path (the live door's raw framing, AgentCore's /ws). A
// parameter absent, or a dotted field, is a field missing: the agent's
// dial refuses it, naming it.
func QueryInput(m *config.Method, q url.Values) Input {
	fields := map[string]json.RawMessage{}
	for _, segs := range [2][]config.PathSegment{m.Segments, m.Query} {
		for _, seg := range segs {
			f := seg.Field
			if f == "" || f == config.FieldClassMethod || f == config.FieldRoute || strings.Contains(f, ".") || !q.Has(f) {
				continue
			}
			v, _ := json.Marshal(q.Get(f))
			fields[f] = v
		}
	}
	b := []byte{'{'}
	for k, v := range fields {
		if len(b) > 1 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(k)
		b = append(append(append(b, key...), ':'), v...)
	}
	b = append(b, '}')
	return Input{Raw: b, Fields: fields}
}
