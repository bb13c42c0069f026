package dialect

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestFunctionEventAsMarshal: the function call and response events
// written by hand are byte for byte the ones encoding/json writes, in both
// key cases, for ids and names JSON escapes and for args and responses of
// every kind (an object, another value, none, with whitespace).
func TestFunctionEventAsMarshal(t *testing.T) {
	values := []string{``, `{}`, `{"city":"Paris"}`, "{ \"a\" : [1, 2.5e3, null] }", `"text"`, `7`, `[1,2]`, `null`, `true`, `{"x":"<&>\u2028"}`}
	names := []string{"", "get_weather", "a\"b\\c", "é\n<>&", "\xff"}
	for _, snake := range []bool{false, true} {
		a := newADKEmitter("agent", snake)
		a.max = 1 << 20
		a.newID = func() string { return "ev-1" }
		a.now = func() time.Time { return time.Unix(1754000000, 123456000) }
		for i, v := range values {
			name, id := names[i%len(names)], names[(i+2)%len(names)]
			for _, kind := range []Kind{ToolCall, ToolResult} {
				e := Event{Kind: kind, ID: id, Name: name, JSON: json.RawMessage(v)}
				var want []byte
				if kind == ToolCall {
					args := json.RawMessage(v)
					switch {
					case v == "":
						args = json.RawMessage("{}")
					case v[0] != '{':
						args = marshal(map[string]json.RawMessage{"value": args})
					}
					want = a.eventID("ev-1", "model", false, adkPart{a.key("functionCall", "function_call"): map[string]any{"id": id, "name": name, "args": args}})
				} else {
					resp := json.RawMessage(v)
					if v == "" || v[0] != '{' {
						resp = marshal(map[string]json.RawMessage{"result": orNull(resp)})
					}
					want = a.eventID("ev-1", "user", false, adkPart{a.key("functionResponse", "function_response"): map[string]any{"id": id, "name": name, "response": resp}})
				}
				if got := a.functionEvent(e); string(got) != string(want) {
					t.Errorf("functionEvent(%v %q %q %s) =\n%s\nwant\n%s", kind, id, name, v, got, want)
				}
			}
		}
	}
}

// TestTextLinesAsMarshal: the tool call, tool result and end lines of emit
// text written by hand are the ones encoding/json writes.
func TestTextLinesAsMarshal(t *testing.T) {
	values := []string{``, `{}`, `{"city":"Paris"}`, "[ 1, 2 ]", `"text"`, `null`}
	names := []string{"", "get_weather", "a\"b\\c", "é\n<>&"}
	for i, v := range values {
		e := Event{ID: names[i%len(names)], Name: names[(i+1)%len(names)], JSON: json.RawMessage(v)}
		call := marshal(struct {
			ID   string          `json:"id,omitempty"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}{e.ID, e.Name, orEmpty(e.JSON)})
		if got := toolCallObject(nil, e); string(got) != string(call) {
			t.Errorf("toolCallObject(%+v) = %s, want %s", e, got, call)
		}
		result := marshal(struct {
			ID     string          `json:"id,omitempty"`
			Name   string          `json:"name,omitempty"`
			Output json.RawMessage `json:"output"`
		}{e.ID, e.Name, orNull(e.JSON)})
		if got := toolResultObject(nil, e); string(got) != string(result) {
			t.Errorf("toolResultObject(%+v) = %s, want %s", e, got, result)
		}
	}
	for _, finish := range []string{"", "stop", "a\"b"} {
		for _, usage := range []string{"", `{"total_tokens":3}`} {
			te := &textEmitter{max: 1 << 20, finish: finish}
			if usage != "" {
				te.usage = json.RawMessage(usage)
			}
			lines, err := te.close(nil)
			want := marshal(struct {
				End struct {
					FinishReason string          `json:"finish_reason,omitempty"`
					Usage        json.RawMessage `json:"usage,omitempty"`
				} `json:"end"`
			}{struct {
				FinishReason string          `json:"finish_reason,omitempty"`
				Usage        json.RawMessage `json:"usage,omitempty"`
			}{finish, te.usage}})
			if err != nil || len(lines) != 1 || string(lines[0]) != string(want) {
				t.Errorf("end line (%q, %s) = %q %v, want %s", finish, usage, lines, err, want)
			}
		}
	}
}

// TestEmitCapExact: a tool call or tool result line of exactly the cap
// is written; with the cap one byte shorter it is record_too_large. (The
// tool result's line is the longer: under the tool call's cap it is
// refused after the call is written.)
func TestEmitCapExact(t *testing.T) {
	args := `{"q":"` + strings.Repeat("x", 300) + `"}`
	src := "data: {\"type\":\"tool-input-available\",\"toolCallId\":\"c1\",\"toolName\":\"search\",\"input\":" + args + "}\n\n" +
		"data: {\"type\":\"tool-output-available\",\"toolCallId\":\"c1\",\"output\":" + args + "}\n\n"
	lines := func(max int) ([]string, error) {
		r := Agent{MaxRecord: max}.Map(testCall(config.DialectVercelUI, config.EmitText), newFixtureRecords(strings.NewReader(src), nil))
		var out []string
		for r.Next() {
			out = append(out, string(r.Record()))
		}
		return out, r.Err()
	}
	all, err := lines(1 << 20)
	if err != nil || len(all) != 3 {
		t.Fatalf("with a cap far above: %q, %v; want a tool call, a tool result and the end", all, err)
	}
	for i, l := range all[:2] {
		got, err := lines(len(l)) // a longer line after it may be refused
		if len(got) < i+1 || got[i] != l {
			t.Errorf("line %d (%d bytes) under a cap of %d bytes: %q, %v; want it written", i+1, len(l), len(l), got, err)
		}
		got, err = lines(len(l) - 1)
		if !errors.Is(err, core.ErrRecordTooLarge) || len(got) != i {
			t.Errorf("line %d (%d bytes) under a cap of %d bytes: %q, %v; want the lines before it and record_too_large", i+1, len(l), len(l)-1, got, err)
		}
	}
}
