package ask

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

func TestParse(t *testing.T) {
	rec := []byte(`{"input_required":{"message":"Approve?","id":"q1","schema":{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}}}`)
	if !Is(rec) {
		t.Fatal("Is = false for a question record")
	}
	q, err := Parse(rec, 64<<10)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if q.ID != "q1" || q.Kind != KindForm || q.Message != "Approve?" || q.Resolved() == nil {
		t.Errorf("Parse = %+v", q)
	}
	for _, tc := range []struct {
		r    Reply
		want string
	}{
		{Reply{Action: Accept, Content: json.RawMessage(`{"approve":true}`)}, ""},
		{Reply{Action: Accept, Content: json.RawMessage(`{"approve":"yes"}`)}, "does not meet the question's schema"},
		{Reply{Action: Accept}, "does not meet the question's schema"},
		{Reply{Action: Decline}, ""},
		{Reply{Action: Cancel}, ""},
		{Reply{Action: "maybe"}, `"maybe" is not accept, decline or cancel`},
		{Reply{Action: Accept, Content: json.RawMessage(`{"approve":true,"pad":"` + strings.Repeat("x", 70<<10) + `"}`)}, "more than limits.questions.bytes"},
	} {
		err := q.Check(tc.r, 64<<10)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%s %s) = %v, want %q", tc.r.Action, tc.r.Content, err, tc.want)
		}
	}
	u, err := Parse([]byte(`{"input_required":{"message":"Sign in","kind":"url","url":"https://example.com/login"}}`), 0)
	if err != nil || u.Kind != KindURL || u.URL != "https://example.com/login" || u.Schema != nil {
		t.Errorf("url question = %+v, %v", u, err)
	}
}

// TestParseRefuses: every malformed question ends the call with a
// BAD_REPLY that says what is wrong; one over the cap with
// QUESTION_TOO_LARGE, before anything of it is decoded.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ rec, want string }{
		{`{"input_required":{"kind":"form"}}`, "message is missing"},
		{`{"input_required":{"message":"x","kind":"poll"}}`, `kind "poll"`},
		{`{"input_required":{"message":"x","kind":"url"}}`, "needs url"},
		{`{"input_required":{"message":"x","url":"javascript:alert(1)"}}`, "not an absolute http or https URL"},
		{`{"input_required":{"message":"x","schema":{"type":"string"}}}`, "want an object"},
		{`{"input_required":{"message":"x","schema":[1]}}`, "not a JSON Schema object"},
		{`{"input_required":{"message":"x","colour":"red"}}`, "unknown field"},
		{`{"input_required":{"message":"x"},"text":"y"}`, "single member"},
		{`{"input_required":"approve?"}`, "want {"},
	} {
		_, err := Parse([]byte(tc.rec), 64<<10)
		var re *core.ReplyError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want a ReplyError saying %q", tc.rec, err, tc.want)
		}
	}
	big := `{"input_required":{"message":"x","schema":{"type":"object","description":"` + strings.Repeat("y", 10<<20) + `"}}}`
	if _, err := Parse([]byte(big), 64<<10); !errors.Is(err, core.ErrQuestionTooLarge) {
		t.Errorf("Parse(a 10 MB schema) = %v, want ErrQuestionTooLarge", err)
	}
	if f := core.FailureOf(ErrTooLarge); f.Reason != "QUESTION_TOO_LARGE" {
		t.Errorf("FailureOf(ErrTooLarge).Reason = %q", f.Reason)
	}
}

// TestParseNoRemoteRef: a schema's remote $ref is refused, never fetched.
func TestParseNoRemoteRef(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"object"}`))
	}))
	defer srv.Close()
	_, err := Parse([]byte(`{"input_required":{"message":"x","schema":{"type":"object","properties":{"a":{"$ref":"`+srv.URL+`/s.json"}}}}}`), 0)
	if err == nil {
		t.Error("Parse with a remote $ref: no error")
	}
	if hits.Load() != 0 {
		t.Errorf("the remote $ref was fetched %d times", hits.Load())
	}
}

func TestWithReply(t *testing.T) {
	in := json.RawMessage(`{"message":"hi","n":12345678901234567890,"reply":{"old":1}}`)
	got := WithReply(in, Reply{ID: "q1", Action: Accept, Content: json.RawMessage(`{"a":1}`)})
	want := `{"message":"hi","n":12345678901234567890,"reply":{"id":"q1","action":"accept","content":{"a":1}}}`
	if string(got) != want {
		t.Errorf("WithReply = %s, want %s", got, want)
	}
	if got := WithReply(json.RawMessage(`{}`), Reply{Action: Decline}); string(got) != `{"reply":{"action":"decline"}}` {
		t.Errorf("WithReply({}) = %s", got)
	}
}

func TestRecord(t *testing.T) {
	q, err := Parse([]byte(`{"input_required":{"message":"Approve?","schema":{"type":"object"}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(q.Record()); got != `{"input_required":{"kind":"form","message":"Approve?","schema":{"type":"object"}}}` {
		t.Errorf("Record = %s", got)
	}
}
