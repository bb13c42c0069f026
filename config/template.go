package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDepth bounds how deeply a body template may nest.
const maxDepth = 100

// inputRef reports whether s is a substitution leaf, "{input}" or
// "{input.a.b}", and returns its field ("" for the whole input). It
// matches what the request builder substitutes; whether the field is
// well formed is checkRef's job.
func inputRef(s string) (field string, ok bool) {
	if s == "{input}" {
		return "", true
	}
	if strings.HasPrefix(s, "{input.") && strings.HasSuffix(s, "}") {
		return s[len("{input.") : len(s)-1], true
	}
	return "", false
}

// checkRef rejects a substitution leaf whose field is malformed; any other
// string is a literal and fine.
func checkRef(s string) error {
	if field, ok := inputRef(s); ok && s != "{input}" && !isField(field) {
		return fmt.Errorf(`%q: invalid input field %q (want "{input}" or "{input.a.b}": names of letters, digits and "_")`, s, field)
	}
	return nil
}

// checkRefs checks every string leaf of a decoded JSON template.
func checkRefs(v any, path string) error {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) { // the same problem every run
			if err := checkRefs(v[k], join(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkRefs(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case string:
		if err := checkRef(v); err != nil {
			if path != "" {
				return fmt.Errorf("%s: %w", path, err)
			}
			return err
		}
	}
	return nil
}

// template turns a YAML body template into Go values (jsonValue), its
// strings checked as {input.x} references.
func (p *parser) template(n *yaml.Node, path string) any {
	return p.jsonValue(n, path, 0, true, map[*yaml.Node]bool{})
}

// jsonValue turns YAML into Go values: map[string]any, []any, string,
// bool, nil, and json.Number for numbers so that big integers survive.
// With refs (a body template), strings are {input.x} references or
// literals and an unquoted {input.x} is caught; without (a parameters
// schema), strings are taken as written. active, when not nil, holds the
// containers being converted, to catch an alias that refers to its own
// ancestor; depth bounds every walk.
func (p *parser) jsonValue(n *yaml.Node, path string, depth int, refs bool, active map[*yaml.Node]bool) any {
	if n = resolve(n); active[n] {
		p.addf(n.Line, path, "an alias refers to a node that contains it")
		return nil
	}
	if depth > maxDepth {
		p.addf(n.Line, path, "nested deeper than %d levels", maxDepth)
		return nil
	}
	if !p.spend() {
		return nil
	}
	if active != nil && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) {
		active[n] = true
		defer delete(active, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		if ref, ok := flowRef(n); ok && refs {
			p.addf(n.Line, path, "{%s} is a YAML mapping here; quote it to substitute the input: \"{%s}\"", ref, ref)
			return nil
		}
		obj := make(map[string]any, len(n.Content)/2)
		for _, e := range p.entries(n, path) {
			obj[e.name] = p.jsonValue(e.val, join(path, e.name), depth+1, refs, active)
		}
		return obj
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			list = append(list, p.jsonValue(e, fmt.Sprintf("%s[%d]", path, i), depth+1, refs, active))
		}
		return list
	case yaml.ScalarNode:
		if !refs && n.ShortTag() == "!!str" {
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

// flowRef spots "{input.x}" written unquoted, which YAML reads as the flow
// mapping {"input.x": null}.
func flowRef(n *yaml.Node) (string, bool) {
	if n.Style&yaml.FlowStyle == 0 || len(n.Content) != 2 {
		return "", false
	}
	k, v := n.Content[0], n.Content[1]
	if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!null" || v.Value != "" {
		return "", false
	}
	if _, ok := inputRef("{" + k.Value + "}"); !ok {
		return "", false
	}
	return k.Value, true
}

// scalarValue is a YAML scalar as a JSON-ready Go value.
func scalarValue(n *yaml.Node) (any, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return nil, nil
	case "!!bool":
		switch strings.ToLower(n.Value) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a boolean (want true or false)", n.Value)
	case "!!int", "!!float":
		num, ok := number(tag, n.Value)
		if !ok {
			return nil, fmt.Errorf("%s is not a number JSON can carry (quote it to send a string)", n.Value)
		}
		return num, nil
	case "!!str", "!!timestamp", "!!merge":
		// A timestamp goes as written: JSON has no time type.
		return n.Value, checkRef(n.Value)
	default:
		return nil, fmt.Errorf("unsupported tag %s (want a string, number, boolean or null)", tag)
	}
}

// jsonNumber is the grammar of a JSON number (RFC 8259, section 6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// number turns YAML number text into JSON number text. Text that already
// is a JSON number is kept as is, so big integers lose nothing; other YAML
// spellings (0x1F, 0o17, 1_000, +5, .5) are converted, integers exactly.
// Infinity and NaN have no JSON form.
func number(tag, s string) (json.Number, bool) {
	if t := strings.TrimPrefix(s, "+"); jsonNumber.MatchString(t) {
		return json.Number(t), true
	}
	if tag == "!!int" {
		var i big.Int
		if _, ok := i.SetString(s, 0); ok {
			return json.Number(i.String()), true
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
}

// jsonTemplate reads a template written as a JSON string. Numbers stay
// json.Number; a key written twice is an error, as it is in YAML.
func jsonTemplate(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := jsonValue(dec, 0)
	if err == nil {
		if _, err = dec.Token(); err == nil {
			err = errors.New("more than one JSON value")
		} else if err == io.EOF {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("invalid JSON template: %v", err)
	}
	return v, nil
}

func jsonValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	tok, err := token(dec)
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := make(map[string]any)
		for dec.More() {
			k, err := token(dec)
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok { // Token rejects a non-string key; this is a safeguard
				return nil, fmt.Errorf("object key %v is not a string", k)
			}
			if _, dup := obj[key]; dup {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			if obj[key], err = jsonValue(dec, depth+1); err != nil {
				return nil, err
			}
		}
		_, err := token(dec) // '}'
		return obj, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := jsonValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := token(dec) // ']'
		return list, err
	}
	return tok, nil
}

// token is the next JSON token; inside a value, the end of the text is a
// value cut short.
func token(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return tok, err
}
