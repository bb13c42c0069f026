package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// The bidi methods and limits.live: conversations, frames each way over a
// WebSocket the agent serves (docs/live.md).

// Live is limits.live: the caps and clocks of every conversation of a
// bidi method.
type Live struct {
	// FrameBytes caps one frame, either way: a bigger one closes the
	// connection with 1009. Default: 1 MiB.
	FrameBytes int64
	// QueueFrames and QueueBytes cap the frames read from one side and
	// not yet written to the other (a slow reader's backlog): past either
	// the slow side is closed with 1008, so that memory stays bounded.
	// Defaults: 64 frames, 1 MiB.
	QueueFrames int
	QueueBytes  int64
	// Connections caps the conversations open at once on every door;
	// past it an upgrade is refused 503. Default: 100.
	Connections int
	// Idle closes a conversation no frame crossed either way this long,
	// with 1001. Default: 5m.
	Idle time.Duration
	// MaxDuration closes a conversation open this long, with 1001: under
	// Agent Runtime's 10-minute cut, so the caller learns why. Default: 9m.
	MaxDuration time.Duration
}

// DefaultLive are limits.live's defaults.
var DefaultLive = Live{
	FrameBytes:  1 << 20,
	QueueFrames: 64,
	QueueBytes:  1 << 20,
	Connections: 100,
	Idle:        5 * time.Minute,
	MaxDuration: 9 * time.Minute,
}

// Bidi is the bidi method named name, or nil: the method a door that
// converses serves ("*" is never bidi).
func (c *Config) Bidi(name string) *Method {
	for _, m := range c.Methods {
		if m.Name == name && m.Mode == ModeBidi {
			return m
		}
	}
	return nil
}

// checkBidi reports the keys of bidi method m (at path, entry e) that a
// conversation cannot have. Its agent side is a WebSocket the agent
// serves, upgraded from a GET, or one POST there whose body and response
// stay open with a line per frame (reply: ndjson): frames are relayed as
// they are, so nothing shapes a body or reads a reply. Its path may take
// {field}s: a conversation fills them once, as it opens, from the live
// door's setup input or from the upgrade URL's query parameters of the
// same names (docs/live.md).
func (p *parser) checkBidi(e entry, path string, m *Method, callSet bool) {
	if m.Name == "*" {
		p.addf(e.key.Line, join(path, "mode"), `a "*" method cannot be bidi (name the conversation's method)`)
	}
	if m.Handler != "" {
		// A handler that converses (adk.bidi_stream_query) builds its own
		// agent side: no call to check. Method has refused a call beside it.
		if want := handlerModes[m.Handler]; want != ModeBidi {
			p.addf(e.key.Line, join(path, "handler"), "%s serves mode %q, not a conversation (want %s, or no handler)", m.Handler, want, oneOf(bidiHandlers(), false))
		}
		m.Body = BodyNone
		return
	}
	line := e.key.Line
	keys := map[string]int{}
	if e.val != nil && e.val.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(e.val.Content); i += 2 {
			keys[e.val.Content[i].Value] = e.val.Content[i].Line
		}
	}
	if l, ok := keys["call"]; ok {
		line = l
	}
	// The one other agent side: a POST whose body and response stay open,
	// a line per frame each way (proxy/live's NDJSON).
	_, replySet := keys["reply"]
	switch {
	case !callSet:
		p.addf(line, join(path, "call"), "missing: a bidi method's agent side is a WebSocket it serves (want e.g. call: GET /live), or a POST with reply: ndjson")
	case m.Verb == "POST" && !replySet:
		p.addf(line, join(path, "call"), "a bidi method called with POST needs reply: ndjson (its request's body and response carry a line per frame); for the agent's WebSocket, call: GET %s", m.Path)
	case m.Verb == "POST" && m.Reply != ReplyNDJSON:
		p.addf(keys["reply"], join(path, "reply"), "a bidi method called with POST takes reply: ndjson only (a line per frame each way), not %s", m.Reply)
	case m.Verb != "GET" && m.Verb != "POST":
		p.addf(line, join(path, "call"), "a bidi method is called with GET (the agent's WebSocket, upgraded) or with POST and reply: ndjson (one full-duplex request), not %s", m.Verb)
	}
	for _, k := range []string{"reply", "dialect", "emit", "output", "body", "parameters", "example", "headers"} {
		if l, ok := keys[k]; ok && (k != "reply" || m.Verb != "POST") {
			p.addf(l, join(path, k), "does not apply to a bidi method (its frames are relayed as they are)")
		}
	}
	m.Body = BodyNone
}

// bidiHandlers are the handlers that serve conversations.
func bidiHandlers() []string {
	var names []string
	for _, n := range handlerNames() {
		if handlerModes[n] == ModeBidi {
			names = append(names, n)
		}
	}
	return names
}

// live decodes limits.live over its defaults.
func (p *parser) live(e entry, path string, l *Live) {
	keys := []string{"frame_bytes", "queue_frames", "queue_bytes", "connections", "idle", "max_duration"}
	if !p.mapping(e.val, path, "a mapping with "+oneOf(keys, false)) {
		return
	}
	queueLine := 0
	var queueText string
	for _, f := range p.entries(e.val, path) {
		key := join(path, f.name)
		switch f.name {
		case "frame_bytes", "queue_bytes":
			if isNull(f.val) {
				continue
			}
			v, err := size(f.val)
			if err == nil && v > 1<<30 {
				p.addf(f.val.Line, key, "%s is larger than the most allowed, 1GiB", f.val.Value)
				continue
			}
			if err != nil {
				p.addf(f.val.Line, key, "%v", err)
				continue
			}
			if f.name == "frame_bytes" {
				l.FrameBytes = v
			} else {
				l.QueueBytes, queueLine, queueText = v, f.val.Line, f.val.Value
			}
		case "queue_frames", "connections":
			v, ok := p.count(f, key, "")
			if !ok {
				continue
			}
			if v == 0 {
				p.addf(f.val.Line, key, "must be at least 1")
				continue
			}
			if f.name == "queue_frames" {
				l.QueueFrames = v
			} else {
				l.Connections = v
			}
		case "idle", "max_duration":
			d, ok := p.nonNegative(f, key)
			if !ok {
				continue
			}
			if d == 0 {
				p.addf(f.val.Line, key, "must be positive")
				continue
			}
			if f.name == "idle" {
				l.Idle = d
			} else {
				l.MaxDuration = d
			}
		default:
			p.unknown(f, path, keys...)
		}
	}
	if l.QueueBytes < l.FrameBytes {
		line, text := queueLine, queueText
		if line == 0 {
			line, text = e.val.Line, sizeName(l.QueueBytes)
		}
		p.addf(line, join(path, "queue_bytes"), "%s is less than frame_bytes (%d bytes): a frame of that size could never be queued", text, l.FrameBytes)
	}
}
