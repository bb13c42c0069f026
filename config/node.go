package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds how many YAML nodes one file may expand to. Aliases and
// merge keys let a few lines stand for millions of nodes ("billion
// laughs"); past this bound Parse reports a problem instead of working on.
const maxNodes = 100_000

// parser collects the problems of one file while it decodes it.
type parser struct {
	problems []Problem
	nodes    int // nodes visited so far, aliases and merges expanded
	// adminLine is where admin is declared, for checkProtocols.
	adminLine int
}

// addf records a problem.
func (p *parser) addf(line int, path, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: line, Path: oneLine(path), Msg: oneLine(fmt.Sprintf(format, args...))})
}

// oneLine escapes control characters, which a key or the YAML library's
// message may carry, so that a problem prints on one line.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// spend counts one visited node and reports whether the file is still
// within maxNodes; the first time it is not, it records the problem.
func (p *parser) spend() bool {
	p.nodes++
	if p.nodes == maxNodes+1 {
		p.addf(0, "", "the file expands to more than %d YAML nodes (through aliases or merge keys?)", maxNodes)
	}
	return p.nodes <= maxNodes
}

// sorted returns the problems in line order without repeats: a mapping
// merged in two places reports its own faults twice otherwise.
func (p *parser) sorted() []Problem {
	sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
	seen := make(map[Problem]bool, len(p.problems))
	out := p.problems[:0]
	for _, pr := range p.problems {
		if !seen[pr] {
			seen[pr] = true
			out = append(out, pr)
		}
	}
	return out
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or a YAML null ("", "~", "null").
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// join extends a dotted key path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// entry is one key and value of a mapping, aliases resolved.
type entry struct {
	name string     // the key's text
	key  *yaml.Node // for the key's line
	val  *yaml.Node
}

// entries lists a mapping's keys and values in file order. A key written
// twice, or one that is not a scalar, is a problem. Merge keys
// ("<<: *base") are expanded in place as YAML 1.1 defines them: keys
// written in the mapping win over merged ones, and an earlier merged
// mapping wins over a later one.
func (p *parser) entries(n *yaml.Node, path string) []entry {
	return p.mergedEntries(n, path, map[*yaml.Node]bool{})
}

func (p *parser) mergedEntries(n *yaml.Node, path string, active map[*yaml.Node]bool) []entry {
	active[n] = true
	defer delete(active, n)

	// First pass: the keys written here, which win over merged ones.
	own := make(map[string]int) // key → line it is first written on
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if isMerge(k) {
			continue
		}
		if k = resolve(k); k.Kind != yaml.ScalarNode {
			p.addf(k.Line, path, "a key must be a plain string, not a %s", kindName(k))
			continue
		}
		if first, dup := own[k.Value]; dup {
			p.addf(k.Line, join(path, k.Value), "duplicate key (first written on line %d)", first)
			continue
		}
		own[k.Value] = k.Line
	}

	var out []entry
	added := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !p.spend() {
			return nil
		}
		k, v := n.Content[i], resolve(n.Content[i+1])
		if isMerge(k) {
			for _, src := range p.mergeSources(k, v, path) {
				if active[src] {
					p.addf(k.Line, join(path, "<<"), "merges a mapping into itself")
					continue
				}
				for _, e := range p.mergedEntries(src, path, active) {
					if _, mine := own[e.name]; !mine && !added[e.name] {
						added[e.name] = true
						out = append(out, e)
					}
				}
			}
			continue
		}
		k = resolve(k)
		if k.Kind != yaml.ScalarNode || added[k.Value] || own[k.Value] != k.Line {
			continue // reported above
		}
		added[k.Value] = true
		out = append(out, entry{name: k.Value, key: k, val: v})
	}
	return out
}

// isMerge reports whether k is the merge key "<<".
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// mergeSources are the mappings a merge key names: one, or a list.
func (p *parser) mergeSources(k, v *yaml.Node, path string) []*yaml.Node {
	switch v.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		srcs := make([]*yaml.Node, 0, len(v.Content))
		for _, s := range v.Content {
			if s = resolve(s); s.Kind == yaml.MappingNode {
				srcs = append(srcs, s)
				continue
			}
			p.addf(s.Line, join(path, "<<"), "can merge only mappings, not a %s", kindName(s))
		}
		return srcs
	}
	p.addf(k.Line, join(path, "<<"), "can merge only a mapping or a list of mappings (e.g. <<: *defaults), not a %s", kindName(v))
	return nil
}

// mapping reports whether n is a mapping, recording a problem otherwise. A
// null value is not a mapping but no problem either: the caller uses its
// defaults.
func (p *parser) mapping(n *yaml.Node, path, want string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.MappingNode {
		p.addf(n.Line, path, "want %s, not a %s", want, kindName(n))
		return false
	}
	return true
}

// scalar returns a scalar's text. A null is ok == false with no problem,
// a mapping or a list is ok == false with one.
func (p *parser) scalar(e entry, path string) (string, bool) {
	if isNull(e.val) {
		return "", false
	}
	if e.val.Kind != yaml.ScalarNode {
		p.addf(e.val.Line, path, "want a single value, not a %s", kindName(e.val))
		return "", false
	}
	return e.val.Value, true
}

// unknown reports a key the schema does not have.
func (p *parser) unknown(e entry, path string, allowed ...string) {
	if near := nearest(e.name, allowed); near != "" {
		p.addf(e.key.Line, join(path, e.name), "unknown key: did you mean %s? (want %s)", near, oneOf(allowed, false))
		return
	}
	p.addf(e.key.Line, join(path, e.name), "unknown key (want %s)", oneOf(allowed, false))
}

// nearest is the choice a mistyped key most likely meant: the closest by
// edit distance (a transposition counts one edit, case none), when it is
// one edit away, or two for keys of five letters or more ("timeout",
// "upsteam", "firstbyte"); "" when none is that close.
func nearest(key string, choices []string) string {
	best, bestD := "", 0
	for _, c := range choices {
		if len(key) > len(c)+2 || len(c) > len(key)+2 {
			continue // more than two edits apart; and a long key costs nothing
		}
		d := editDistance(strings.ToLower(key), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	if len(key) >= 5 {
		limit = 2
	}
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes, each one edit.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// oneOf lists choices as "a, b or c"; quote quotes each.
func oneOf(choices []string, quote bool) string {
	q := make([]string, len(choices))
	for i, c := range choices {
		if quote {
			c = fmt.Sprintf("%q", c)
		}
		q[i] = c
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// kindName names what a node is, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "string"
		case "!!int", "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		case "!!null":
			return "null"
		}
		return "value tagged " + n.ShortTag()
	}
	return "YAML node"
}
