package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseBidi(t *testing.T) {
	const yaml = `upstream: {url: "http://127.0.0.1:8000"}
limits:
  live: {frame_bytes: 64KiB, queue_frames: 16, queue_bytes: 1MiB, connections: 5, idle: 30s, max_duration: 2m}
methods:
  query: {}
  converse:
    mode: bidi
    call: GET /live
`
	c, err := Parse("sidecar.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	m := c.Bidi("converse")
	if m == nil || m.Mode != ModeBidi || m.Verb != "GET" || m.Path != "/live" {
		t.Fatalf("Bidi(%q) = %+v, want the GET /live bidi method", "converse", m)
	}
	if c.Bidi("query") != nil {
		t.Errorf("Bidi(%q) is not nil for a unary method", "query")
	}
	for _, stream := range []bool{false, true} {
		if got := c.Lookup("converse", stream); got != nil {
			t.Errorf("Lookup(converse, %v) = %q: a bidi method serves neither call route", stream, got.Name)
		}
	}
	want := Live{FrameBytes: 64 << 10, QueueFrames: 16, QueueBytes: 1 << 20, Connections: 5, Idle: 30 * time.Second, MaxDuration: 2 * time.Minute}
	if c.Limits.Live != want {
		t.Errorf("Limits.Live = %+v, want %+v", c.Limits.Live, want)
	}

	d, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  live: {mode: bidi, call: GET /live}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if d.Limits.Live != DefaultLive {
		t.Errorf("default Limits.Live = %+v, want %+v", d.Limits.Live, DefaultLive)
	}
	if DefaultLive.MaxDuration >= 10*time.Minute {
		t.Errorf("DefaultLive.MaxDuration = %v, want below Agent Runtime's 10 minutes", DefaultLive.MaxDuration)
	}
}

// TestParseBidiNDJSON: a bidi method's agent side may be one POST whose
// body and response carry a line per frame (reply: ndjson).
func TestParseBidiNDJSON(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  talk: {mode: bidi, call: POST /live, reply: ndjson}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	m := c.Bidi("talk")
	if m == nil || m.Verb != "POST" || m.Path != "/live" || m.Reply != ReplyNDJSON || m.Body != BodyNone {
		t.Fatalf("Bidi(%q) = %+v, want the POST /live bidi method with reply ndjson", "talk", m)
	}
}

func TestParseBidiProblems(t *testing.T) {
	tests := []struct {
		name, method, want string
	}{
		{"default call", "{mode: bidi}", `methods.a.call: missing: a bidi method's agent side is a WebSocket it serves (want e.g. call: GET /live), or a POST with reply: ndjson`},
		{"post without ndjson", "{mode: bidi, call: POST /live}", `methods.a.call: a bidi method called with POST needs reply: ndjson (its request's body and response carry a line per frame); for the agent's WebSocket, call: GET /live`},
		{"post with sse", "{mode: bidi, call: POST /live, reply: sse}", `methods.a.reply: a bidi method called with POST takes reply: ndjson only (a line per frame each way), not sse`},
		{"put", "{mode: bidi, call: PUT /live}", `methods.a.call: a bidi method is called with GET (the agent's WebSocket, upgraded) or with POST and reply: ndjson (one full-duplex request), not PUT`},
		{"get with ndjson", "{mode: bidi, call: GET /live, reply: ndjson}", `methods.a.reply: does not apply to a bidi method (its frames are relayed as they are)`},
		{"ndjson body", "{mode: bidi, call: POST /live, reply: ndjson, body: envelope}", `methods.a.body: does not apply to a bidi method`},
		{"reply", "{mode: bidi, call: GET /live, reply: sse}", `methods.a.reply: does not apply to a bidi method (its frames are relayed as they are)`},
		{"dialect", "{mode: bidi, call: GET /live, dialect: openai}", `methods.a.dialect: does not apply to a bidi method (its frames are relayed as they are)`},
		{"body", "{mode: bidi, call: GET /live, body: envelope}", `methods.a.body: does not apply to a bidi method`},
		{"wildcard", "{mode: bidi, call: GET /live}", `methods.*.mode: a "*" method cannot be bidi (name the conversation's method)`},
		{"call handler", "{mode: bidi, handler: adk.stream_query, call: GET /live}", `methods.a.handler: adk.stream_query serves mode "stream", not a conversation (want adk.bidi_stream_query, or no handler)`},
		{"handler and call", "{handler: adk.bidi_stream_query, call: GET /live}", `methods.a.call: does not apply to a method with a handler (adk.bidi_stream_query builds its own requests)`},
		{"handler not bidi", "{mode: stream, handler: adk.bidi_stream_query}", `methods.a.mode: adk.bidi_stream_query serves conversations only (want mode: bidi, or none)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "a"
			if tt.name == "wildcard" {
				name = `"*"`
			}
			yaml := "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  " + name + ": " + tt.method + "\n"
			_, err := Parse("sidecar.yaml", []byte(yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", yaml, err, tt.want)
			}
		})
	}
	small := "upstream: {url: \"http://127.0.0.1:8000\"}\nlimits: {live: {queue_bytes: 64KiB}}\nmethods:\n  a: {}\n"
	if _, err := Parse("sidecar.yaml", []byte(small)); err == nil || !strings.Contains(err.Error(), "limits.live.queue_bytes: 64KiB is less than frame_bytes (1048576 bytes): a frame of that size could never be queued") {
		t.Errorf("Parse(%q) error = %v, want queue_bytes below frame_bytes refused", small, err)
	}
	yaml := "upstream: {url: \"http://127.0.0.1:8000\"}\nlimits: {live: {queue_frames: 0, idle: 0, bogus: 1}}\nmethods:\n  a: {}\n"
	_, err := Parse("sidecar.yaml", []byte(yaml))
	for _, want := range []string{"limits.live.queue_frames: must be at least 1", "limits.live.idle: must be positive", "limits.live.bogus: unknown key"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v, want one containing %q", yaml, err, want)
		}
	}
}

// TestParseBidiHandler: a bidi method may name a handler that serves
// conversations (the ADK preset's adk.bidi_stream_query) in place of a
// call; its mode is bidi unless the file says otherwise.
func TestParseBidiHandler(t *testing.T) {
	for _, method := range []string{"{handler: adk.bidi_stream_query}", "{mode: bidi, handler: adk.bidi_stream_query}"} {
		yaml := "upstream: {url: \"http://127.0.0.1:8000\"}\nadk: {app: weather}\nmethods:\n  talk: " + method + "\n"
		c, err := Parse("sidecar.yaml", []byte(yaml))
		if err != nil {
			t.Fatalf("Parse(%q): %v", yaml, err)
		}
		if m := c.Bidi("talk"); m == nil || m.Handler != "adk.bidi_stream_query" || m.Path != "" {
			t.Errorf("Parse(%q): Bidi(talk) = %+v, want a bidi method of handler adk.bidi_stream_query, no call", yaml, m)
		}
	}
}

// TestParseBidiFields: a bidi method's path and query may take {field}
// placeholders, filled per conversation (from the live door's setup input,
// or from the upgrade URL's query parameters of the same names).
func TestParseBidiFields(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  talk: {mode: bidi, call: \"GET /run_live/{app}?user_id={user_id}&session_id={session_id}\"}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	m := c.Bidi("talk")
	var fields []string
	for _, s := range append(m.Segments, m.Query...) {
		if s.Field != "" {
			fields = append(fields, s.Field)
		}
	}
	if got := strings.Join(fields, ","); got != "app,user_id,session_id" {
		t.Errorf("Bidi(talk)'s fields = %q, want app,user_id,session_id", got)
	}
}

// TestExpandedBidi: validate --print writes a bidi method and limits.live
// so that they parse back the same.
func TestExpandedBidi(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(`upstream: {url: "http://127.0.0.1:8000"}
limits: {live: {frame_bytes: 64KiB, idle: 30s}}
methods:
  converse: {mode: bidi, call: GET /live, timeouts: {first_byte: 10s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil {
		t.Fatalf("the printed map does not parse: %v\n%s", err, c.Expanded())
	}
	if got, want := *again.Bidi("converse"), *c.Bidi("converse"); got.Verb != want.Verb || got.Path != want.Path || got.Timeouts != want.Timeouts {
		t.Errorf("printed bidi method = %+v, want %+v", got, want)
	}
	if again.Limits.Live != c.Limits.Live {
		t.Errorf("printed limits.live = %+v, want %+v", again.Limits.Live, c.Limits.Live)
	}
}

// TestSummaryBidi: validate's line counts conversations apart from the
// calls.
func TestSummaryBidi(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  query: {}\n  converse: {mode: bidi, call: GET /live}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "sidecar.yaml: ok: 2 methods (1 unary, 0 streaming, 1 bidi), upstream http://127.0.0.1:8000"
	if got := c.Summary("sidecar.yaml"); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}
