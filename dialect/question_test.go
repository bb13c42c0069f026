package dialect

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// ndjson is a reply of the records, one a line.
func ndjson(records ...string) (*strings.Reader, http.Header) {
	return strings.NewReader(strings.Join(records, "\n") + "\n"), http.Header{"Content-Type": {"application/x-ndjson"}}
}

const question = `{"input_required":{"message":"Which account?","schema":{"type":"object","properties":{"account":{"type":"string"}}},"id":"q1"}}`

// questionLine is question as the stage writes it: Question.Record's
// member order, kind filled in.
const questionLine = `{"input_required":{"id":"q1","kind":"form","message":"Which account?","schema":{"type":"object","properties":{"account":{"type":"string"}}}}}`

// TestQuestionWhateverTheDialect: an agent's input_required record is a
// question in any dialect, written as its record by emit text and emit
// adk alike, and a reply of nothing but the question (no dialect to
// place) still ends cleanly.
func TestQuestionWhateverTheDialect(t *testing.T) {
	chat := `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Let me check."}}]}`
	tests := []struct {
		name    string
		dialect config.Dialect
		emit    config.Emit
		records []string
		want    []string
	}{
		{"chat then a question", config.DialectOpenAIChat, config.EmitText, []string{chat, question},
			[]string{`{"text":"Let me check."}`, questionLine, `{"end":{}}`}},
		{"auto, the question alone", config.DialectAuto, config.EmitText, []string{question},
			[]string{questionLine, `{"end":{}}`}},
		{"auto, the question first", config.DialectAuto, config.EmitText, []string{question, chat},
			[]string{questionLine, `{"text":"Let me check."}`, `{"end":{}}`}},
		{"auto, the question then records of no dialect", config.DialectAuto, config.EmitText, []string{question, `{"message":"hello"}`},
			[]string{questionLine, `{"message":"hello"}`}},
		{"emit adk", config.DialectOpenAIChat, config.EmitADK, []string{question},
			[]string{questionLine}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, h := ndjson(tt.records...)
			got := mapFixture(t, tt.dialect, tt.emit, r, h)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("mapped %q =\n%s\nwant\n%s", tt.records, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestQuestionCollected: a unary call that asked keeps its question in
// its whole output, beside the text before it.
func TestQuestionCollected(t *testing.T) {
	chat := `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Let me check."}}]}`
	for _, tt := range []struct {
		dialect config.Dialect
		records []string
		want    string
	}{
		{config.DialectOpenAIChat, []string{chat, question},
			`{"text":"Let me check.","input_required":{"id":"q1","kind":"form","message":"Which account?","schema":{"type":"object","properties":{"account":{"type":"string"}}}}}`},
		{config.DialectAuto, []string{question, `{"message":"hello"}`},
			`[` + questionLine + `,{"message":"hello"}]`},
		{config.DialectAuto, []string{question},
			`{"text":"","input_required":{"id":"q1","kind":"form","message":"Which account?","schema":{"type":"object","properties":{"account":{"type":"string"}}}}}`},
	} {
		r, h := ndjson(tt.records...)
		rs := Agent{}.mapped(testCall(tt.dialect, config.EmitText), newFixtureRecords(r, h), true)
		got, err := rs.Collect()
		rs.Close()
		if err != nil || string(got) != tt.want {
			t.Errorf("Collect(%q) = %s, %v\nwant %s", tt.records, got, err, tt.want)
		}
	}
}

// TestQuestionBounded: a question past limits.questions.bytes ends the
// call with QUESTION_TOO_LARGE, one that is not a question with
// BAD_REPLY; neither is passed on as text. One past limits.record_bytes
// never reaches the stage: the deframer refuses it.
func TestQuestionBounded(t *testing.T) {
	schemaOf := func(n int) string {
		return `{"input_required":{"message":"Which?","schema":{"type":"object","description":"` + strings.Repeat("x", n) + `"}}}`
	}
	tests := []struct {
		name   string
		rec    string
		wantIs error
		reply  string
	}{
		{"1 MB of schema", schemaOf(1 << 20), core.ErrQuestionTooLarge, ""},
		{"10 MB of schema: past limits.record_bytes first", schemaOf(10 << 20), core.ErrRecordTooLarge, ""},
		{"no message", `{"input_required":{"kind":"form"}}`, nil, "message is missing"},
		{"a schema of a string", `{"input_required":{"message":"?","schema":{"type":"string"}}}`, nil, "want an object"},
		{"another member", `{"input_required":{"message":"?"},"text":"x"}`, nil, "single member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, h := ndjson(tt.rec)
			rs := Agent{MaxQuestion: 64 << 10, MaxRecord: 16 << 20}.Map(testCall(config.DialectOpenAIChat, config.EmitText), newFixtureRecords(r, h))
			defer rs.Close()
			var lines []string
			for rs.Next() {
				lines = append(lines, string(rs.Record()))
			}
			err := rs.Err()
			var re *core.ReplyError
			switch {
			case len(lines) > 0:
				t.Errorf("lines = %.200q, want none", lines)
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("Err() = %v, want %v", err, tt.wantIs)
			case tt.reply != "" && (!errors.As(err, &re) || !strings.Contains(re.Msg, tt.reply)):
				t.Errorf("Err() = %v, want a ReplyError saying %q", err, tt.reply)
			}
		})
	}
}

// TestADKQuestion: the question each ADK pause becomes. ADK's own
// adk_request_input (a long-running tool the model calls with a message
// and a response_schema) asks its message, with its schema when that is
// an object's, else any object.
func TestADKQuestion(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{ConfirmationCall, `{"originalFunctionCall":{"id":"t1","name":"pay","args":{"n":1}},"toolConfirmation":{"hint":" Pay? ","confirmed":false}}`,
			`{"input_required":{"id":"c1","kind":"form","message":"Pay?","schema":` + ConfirmationSchema + `}}`},
		{ConfirmationCall, `{"originalFunctionCall":{"id":"t1","name":"pay","args":{"n":1}},"toolConfirmation":{}}`,
			`{"input_required":{"id":"c1","kind":"form","message":"Approve pay({\"n\":1})?","schema":` + ConfirmationSchema + `}}`},
		{"open_ticket", `{"what":"x"}`,
			`{"input_required":{"id":"c1","kind":"form","message":"open_ticket({\"what\":\"x\"}) waits for its result","schema":{"type":"object"}}}`},
		{"adk_request_input", `{"message":"Which city?","response_schema":{"type":"object","properties":{"city":{"type":"string"}}}}`,
			`{"input_required":{"id":"c1","kind":"form","message":"Which city?","schema":{"type":"object","properties":{"city":{"type":"string"}}}}}`},
		{"adk_request_input", `{"message":"Which city?","response_schema":{"type":"string"}}`,
			`{"input_required":{"id":"c1","kind":"form","message":"Which city?","schema":{"type":"object"}}}`},
		{"adk_request_input", `{"message":"Which city?","response_schema":{"type":"object","$ref":"https://example.com/s.json"}}`,
			`{"input_required":{"id":"c1","kind":"form","message":"Which city?","schema":{"type":"object"}}}`},
	}
	for _, tt := range tests {
		got := ADKQuestion("c1", tt.name, json.RawMessage(tt.args))
		if string(got) != tt.want {
			t.Errorf("ADKQuestion(%s, %s) =\n%s\nwant\n%s", tt.name, tt.args, got, tt.want)
		}
		if _, err := ask.Parse(got, 0); err != nil {
			t.Errorf("ADKQuestion(%s, %s) is no question: %v", tt.name, tt.args, err)
		}
	}
}
