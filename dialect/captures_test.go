package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/producers"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// produced is what a producer script in testdata/dialects sends for one
// variant: the answer's text, its tool calls and results, its error.
type produced struct {
	text    string
	calls   []string // tool_call lines' {"id","name","args"}
	results []string // tool_result lines' {"id","name","output"}
	parts   []string // part records
	err     string   // the agent's message, "" for a clean end
	cut     bool     // the text may end early (see langgraph/error)
}

const (
	weatherCall   = `{"id":"call-1","name":"get_weather","args":{"city":"Paris"}}`
	weatherResult = `{"id":"call-1","name":"get_weather","output":{"city":"Paris","forecast":"sunny","celsius":21}}`
	openaiCall    = `{"id":"call_1","name":"get_weather","args":{"city":"Paris"}}`
	openaiFailure = "The server had an error while processing your request."
)

// captured: every capture under testdata/dialects/captures, by
// <dialect>/<variant>, and what its producer sent (read from vercel.mjs,
// agui.mjs, a2a.mjs, langgraph.mjs, openai.mjs, openai-agents.mjs).
var captured = map[string]produced{
	"vercel-ui/text":  {text: "Hello, world!"},
	"vercel-ui/tool":  {text: "It is sunny in Paris.", calls: []string{weatherCall}, results: []string{weatherResult}},
	"vercel-ui/error": {text: "Partial answer", err: "model overloaded"},
	"vercel-ui/file":  {text: "Here is the chart:", parts: []string{`{"inline_data":{"mime_type":"image/png","data":"` + png1x1 + `"}}`}},

	"ag-ui/text": {text: "Hello, world!Anything else?"},
	"ag-ui/tool": {text: "It is sunny in Paris.", calls: []string{weatherCall},
		results: []string{`{"id":"call-1","name":"get_weather","output":{"forecast":"sunny","celsius":21}}`}},
	"ag-ui/error": {text: "Partial answer", err: "model overloaded"},

	// The working status message ("Looking up the weather") is progress:
	// reasoning, not the answer.
	"a2a/stream":    {text: "It is sunny in Paris."},
	"a2a/stream-v1": {text: "It is sunny in Paris."},
	"a2a/failed":    {err: "weather service unavailable"},
	"a2a/failed-v1": {err: "weather service unavailable"},

	"langgraph/text": {text: "Hello, world!"},
	"langgraph/tool": {text: "It is sunny in Paris.", calls: []string{weatherCall}, results: []string{weatherResult}},
	// The model streams "Partial answer" a character at a time; when the
	// next node throws, the library ends the stream with the error before
	// it has yielded every queued chunk.
	"langgraph/error": {text: "Partial answer", err: "weather service unavailable", cut: true},

	"openai-chat/text":  {text: "Hello, world!"},
	"openai-chat/tool":  {calls: []string{openaiCall}},
	"openai-chat/error": {text: "Partial answer", err: openaiFailure},

	"openai-responses/text":   {text: "Hello, world!"},
	"openai-responses/tool":   {calls: []string{openaiCall}},
	"openai-responses/error":  {text: "Partial answer", err: openaiFailure},
	"openai-responses/failed": {text: "Partial answer", err: openaiFailure},
	"openai-responses/image":  {parts: []string{`{"inline_data":{"mime_type":"image/png","data":"` + png1x1 + `"}}`}},

	"openai-agents/text":  {text: "Hello, world!"},
	"openai-agents/tool":  {text: "It is sunny in Paris.", calls: []string{weatherCall}, results: []string{weatherResult}},
	"openai-agents/error": {text: "Partial answer", err: "model overloaded"},
}

// capture is one saved reply of a real producer.
type capture struct {
	name    string // <dialect>/<variant>
	dialect config.Dialect
	body    []byte
	records func(io.Reader) *fixtureRecords
}

func captures(t testing.TB) []capture {
	files, err := filepath.Glob(filepath.Join(producers.Dir(), "captures", "*", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	var out []capture
	for _, f := range files {
		resp, err := producers.ReadCapture(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d := filepath.Base(filepath.Dir(f))
		out = append(out, capture{
			name:    d + "/" + strings.TrimSuffix(filepath.Base(f), ".txt"),
			dialect: config.Dialect(d),
			body:    body,
			records: func(r io.Reader) *fixtureRecords { return newFixtureRecords(r, resp.Header) },
		})
	}
	return out
}

// replay maps a capture read from r with dialect auto and emit e: the
// lines out, the dialect noted, the error.
func replay(c capture, e config.Emit, r io.Reader) ([]string, string, error) {
	notes := &core.Notes{}
	call := core.Call{Method: &config.Method{Dialect: config.DialectAuto, Emit: e}, Notes: notes}
	recs := Agent{Author: "weather_agent"}.Map(call, c.records(r))
	defer recs.Close()
	var lines []string
	for recs.Next() {
		lines = append(lines, string(recs.Record()))
	}
	return lines, notes.Dialect, recs.Err()
}

// TestCaptures replays every real producer's capture with dialect auto: it
// is detected as its own dialect, and with emit text the producer's text
// comes out complete and in order, with its tool calls and results, and
// its error as the agent's error; the same at every split of the reply.
func TestCaptures(t *testing.T) {
	for _, c := range captures(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // every split of the LangGraph captures takes a while under -race
			want, ok := captured[c.name]
			if !ok {
				t.Fatalf("capture %s has no expectation in captured", c.name)
			}
			lines, noted, err := replay(c, config.EmitText, bytes.NewReader(c.body))
			if noted != string(c.dialect) {
				t.Errorf("detected %q, want %q", noted, c.dialect)
			}
			checkText(t, want, lines, err)

			whole := merged(lines)
			got, _, _ := replay(c, config.EmitText, iotest.OneByteReader(bytes.NewReader(c.body)))
			if merged(got) != whole {
				t.Errorf("one byte at a time:\n%s\nwant\n%s", merged(got), whole)
			}
			for i := 1; i < len(c.body); i++ {
				r := io.MultiReader(bytes.NewReader(c.body[:i]), bytes.NewReader(c.body[i:]))
				if got, _, _ := replay(c, config.EmitText, r); merged(got) != whole {
					t.Fatalf("split at %d:\n%s\nwant\n%s", i, merged(got), whole)
				}
			}
		})
	}
}

func checkText(t *testing.T, want produced, lines []string, err error) {
	t.Helper()
	var text strings.Builder
	var calls, results, parts []string
	ended := false
	for _, l := range lines {
		if part.Is([]byte(l)) {
			parts = append(parts, l)
			continue
		}
		var line struct {
			Text       *string         `json:"text"`
			ToolCall   json.RawMessage `json:"tool_call"`
			ToolResult json.RawMessage `json:"tool_result"`
			End        json.RawMessage `json:"end"`
		}
		if e := json.Unmarshal([]byte(l), &line); e != nil {
			t.Fatalf("line %s: %v", l, e)
		}
		if ended {
			t.Errorf("line %s after the end", l)
		}
		switch {
		case line.Text != nil:
			text.WriteString(*line.Text)
		case line.ToolCall != nil:
			calls = append(calls, string(line.ToolCall))
		case line.ToolResult != nil:
			results = append(results, string(line.ToolResult))
		case line.End != nil:
			ended = true
		}
	}
	if got := text.String(); got != want.text && !(want.cut && got != "" && strings.HasPrefix(want.text, got)) {
		t.Errorf("text %q, want %q", got, want.text)
	}
	if strings.Join(calls, "\n") != strings.Join(want.calls, "\n") {
		t.Errorf("tool calls %q, want %q", calls, want.calls)
	}
	if strings.Join(results, "\n") != strings.Join(want.results, "\n") {
		t.Errorf("tool results %q, want %q", results, want.results)
	}
	if strings.Join(parts, "\n") != strings.Join(want.parts, "\n") {
		t.Errorf("parts %q, want %q", parts, want.parts)
	}
	var ae *core.AgentError
	switch {
	case want.err == "" && (err != nil || !ended):
		t.Errorf("ended %v, error %v; want a clean end", ended, err)
	case want.err != "" && (!errors.As(err, &ae) || ae.Message != want.err || ended):
		t.Errorf("error %v (ended %v), want the agent's error %q", err, ended, want.err)
	}
}

// TestCapturesADK: every capture with emit adk gives ADK events: each an
// Event of the agent with one invocation id, the partial text events'
// text the producer's text, the turn's whole text in a complete event,
// the tool calls and results as functionCall and functionResponse parts.
func TestCapturesADK(t *testing.T) {
	for _, c := range captures(t) {
		t.Run(c.name, func(t *testing.T) {
			want := captured[c.name]
			lines, _, err := replay(c, config.EmitADK, bytes.NewReader(c.body))
			checkADK(t, want, lines, "weather_agent")
			var ae *core.AgentError
			if want.err == "" && err != nil || want.err != "" && (!errors.As(err, &ae) || ae.Message != want.err) {
				t.Errorf("error %v, want %q", err, want.err)
			}
		})
	}
}

// adkEvent is what the playground reads of an ADK event.
type adkEvent struct {
	Author       string `json:"author"`
	InvocationID string `json:"invocationId"`
	ID           string `json:"id"`
	Partial      bool   `json:"partial"`
	Content      struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             *string         `json:"text"`
			Thought          bool            `json:"thought"`
			FunctionCall     json.RawMessage `json:"functionCall"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"content"`
}

// checkADK checks lines are ADK events whose text is want's.
func checkADK(t *testing.T, want produced, lines []string, author string) {
	t.Helper()
	var partial, complete strings.Builder
	var calls, results int
	invocation := ""
	for _, l := range lines {
		var ev adkEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Author != author || ev.ID == "" || ev.InvocationID == "" || len(ev.Content.Parts) == 0 {
			t.Fatalf("line %s is not an ADK event of %s (%v)", l, author, err)
		}
		if invocation == "" {
			invocation = ev.InvocationID
		} else if ev.InvocationID != invocation {
			t.Errorf("line %s: invocation %s, want %s", l, ev.InvocationID, invocation)
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				calls++
				if ev.Content.Role != "model" {
					t.Errorf("functionCall in role %q", ev.Content.Role)
				}
			case p.FunctionResponse != nil:
				results++
				if ev.Content.Role != "user" {
					t.Errorf("functionResponse in role %q", ev.Content.Role)
				}
			case p.Text != nil && !p.Thought && ev.Partial:
				partial.WriteString(*p.Text)
			case p.Text != nil && !p.Thought:
				complete.WriteString(*p.Text)
			}
		}
	}
	if got := partial.String(); got != want.text && !(want.cut && strings.HasPrefix(want.text, got)) {
		t.Errorf("partial events' text %q, want %q", got, want.text)
	}
	if want.err == "" && complete.String() != want.text {
		t.Errorf("complete events' text %q, want %q", complete.String(), want.text)
	}
	if calls != len(want.calls) || results != len(want.results) {
		t.Errorf("%d functionCall and %d functionResponse parts, want %d and %d", calls, results, len(want.calls), len(want.results))
	}
}
