package config

// limits.parts: parts of a call that are not text (an image, a clip of
// audio, a file, structured data; docs/parts.md), both ways.

// Parts is limits.parts: the caps on the parts that are not text, each
// way of a call.
type Parts struct {
	// Bytes caps one part's bytes, decoded (an inline image of 5 MiB is
	// 6.7 MiB of base64 on the wire). A caller's bigger part is refused
	// in the door's shape (413 or its protocol's invalid-params error)
	// before the call starts; an agent's ends the call with
	// PART_TOO_LARGE. A part must also fit in one record
	// (limits.record_bytes) and in the request (limits.request_bytes).
	// Default: 5 MiB.
	Bytes int64
	// Total caps the bytes of every part of one call, one way (what the
	// caller sends, what the agent answers), decoded. Default: 16 MiB.
	Total int64
}

// DefaultParts are limits.parts' defaults.
var DefaultParts = Parts{Bytes: 5 << 20, Total: 16 << 20}

// parts decodes limits.parts over its defaults.
func (p *parser) parts(e entry, path string, q *Parts) {
	keys := []string{"bytes", "total"}
	if !p.mapping(e.val, path, "a mapping with "+oneOf(keys, false)) {
		return
	}
	for _, f := range p.entries(e.val, path) {
		key := join(path, f.name)
		switch f.name {
		case "bytes", "total":
			if isNull(f.val) {
				continue
			}
			v, err := size(f.val)
			switch {
			case err != nil:
				p.addf(f.val.Line, key, "%v", err)
			case v < 1:
				p.addf(f.val.Line, key, "must be at least 1 byte")
			case v > 1<<30:
				p.addf(f.val.Line, key, "%s is larger than the most allowed, 1GiB", f.val.Value)
			case f.name == "bytes":
				q.Bytes = v
			default:
				q.Total = v
			}
		default:
			p.unknown(f, path, keys...)
		}
	}
	if q.Total < q.Bytes {
		p.addf(e.val.Line, path, "total (%d) is less than bytes (%d): one part would not fit in a call", q.Total, q.Bytes)
	}
}
