package config

import "time"

// limits.questions: an agent that asks a question (an input_required
// record, docs/questions.md) and waits for the answer.

// Questions is limits.questions: the caps and clock of every question an
// agent asks, on every door.
type Questions struct {
	// Bytes caps one question: its message, schema and the rest of its
	// record. A bigger one ends the call with QUESTION_TOO_LARGE. It
	// caps an answer's content too. Default: 64 KiB.
	Bytes int64
	// Wait is how long a question waits for its answer: an A2A task
	// left input-required this long fails, an MCP call holding an
	// elicitation open ends, and the agent is told (docs/questions.md).
	// Default: 10m.
	Wait time.Duration
	// Waiting caps the questions waiting for an answer at once on one
	// replica (A2A tasks input-required, MCP elicitations open): past it
	// the oldest waiting A2A task fails as expired, and an elicitation is
	// not sent (the tool result says input is needed). Default: 1000.
	Waiting int
}

// DefaultQuestions are limits.questions' defaults.
var DefaultQuestions = Questions{Bytes: 64 << 10, Wait: 10 * time.Minute, Waiting: 1000}

// questions decodes limits.questions over its defaults.
func (p *parser) questions(e entry, path string, q *Questions) {
	keys := []string{"bytes", "wait", "waiting"}
	if !p.mapping(e.val, path, "a mapping with "+oneOf(keys, false)) {
		return
	}
	for _, f := range p.entries(e.val, path) {
		key := join(path, f.name)
		switch f.name {
		case "bytes":
			if isNull(f.val) {
				continue
			}
			v, err := size(f.val)
			if err == nil && v > 16<<20 {
				p.addf(f.val.Line, key, "%s is larger than the most allowed, 16MiB", f.val.Value)
				continue
			}
			if err == nil && v < 1024 {
				p.addf(f.val.Line, key, "%s is too small to hold a question (want at least 1KiB)", f.val.Value)
				continue
			}
			if err != nil {
				p.addf(f.val.Line, key, "%v", err)
				continue
			}
			q.Bytes = v
		case "waiting":
			v, ok := p.count(f, key, "")
			if !ok {
				continue
			}
			if v == 0 {
				p.addf(f.val.Line, key, "must be at least 1")
				continue
			}
			q.Waiting = v
		case "wait":
			d, ok := p.nonNegative(f, key)
			if !ok {
				continue
			}
			if d == 0 {
				p.addf(f.val.Line, key, "must be positive")
				continue
			}
			q.Wait = d
		default:
			p.unknown(f, path, keys...)
		}
	}
}
