package dialect

import (
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// TestQuestionPassesThrough: an agent's question record (package ask's
// input_required) passes the mapping stage whatever the stream's dialect,
// after the text mapped before it, so a door can carry it: as the
// question's record, its kind filled in.
func TestQuestionPassesThrough(t *testing.T) {
	q := `{"input_required":{"message":"Approve?","id":"q1"}}`
	want := `{"input_required":{"id":"q1","kind":"form","message":"Approve?"}}`
	chunk := `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi "},"finish_reason":null}]}`
	for _, d := range []config.Dialect{config.DialectAuto, config.DialectOpenAIChat} {
		src := "data: " + chunk + "\n\ndata: " + q + "\n\ndata: [DONE]\n\n"
		r := Agent{}.Map(testCall(d, config.EmitText), newFixtureRecords(strings.NewReader(src), nil))
		var out []string
		for r.Next() {
			out = append(out, string(r.Record()))
		}
		if got := strings.Join(out, "\n"); !strings.Contains(got, `{"text":"hi "}`+"\n"+want) || r.Err() != nil {
			t.Errorf("dialect %s: %q, %v; want the text, then the question", d, out, r.Err())
		}
	}
}
