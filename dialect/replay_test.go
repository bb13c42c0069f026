package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/dialects")

// fixtureRecords are an SSE reply deframed by the sidecar's own deframer,
// as the mapping stage gets them from upstream: records with their event
// type and the reply's header.
type fixtureRecords struct {
	core.Records
	header http.Header
}

func (f *fixtureRecords) Header() http.Header { return f.header }

func (f *fixtureRecords) Event() []byte {
	if e, ok := f.Records.(EventType); ok {
		return e.Event()
	}
	return nil
}

// newFixtureRecords deframes a reply as its Content-Type says (SSE when
// it has none), as upstream does.
func newFixtureRecords(r io.Reader, header http.Header) *fixtureRecords {
	f := upstream.FormatFor(config.ReplyAuto, header.Get("Content-Type"))
	if header.Get("Content-Type") == "" {
		f = upstream.FormatSSE
	}
	return &fixtureRecords{upstream.NewStream(f, r, 0), header}
}

// mapFixture maps an SSE reply as a method with dialect d and emit e
// would, and returns the lines out and then "error: …" if it failed.
func mapFixture(t testing.TB, d config.Dialect, e config.Emit, r io.Reader, header http.Header) []string {
	lines, _ := mapNoted(t, d, e, r, header)
	return lines
}

// mapNoted is mapFixture that also returns the dialect noted for the log
// line.
func mapNoted(t testing.TB, d config.Dialect, e config.Emit, r io.Reader, header http.Header) ([]string, string) {
	notes := &core.Notes{}
	c := core.Call{Method: &config.Method{Dialect: d, Emit: e}, Notes: notes}
	recs := Agent{Author: "root_agent"}.Map(c, newFixtureRecords(r, header))
	steady(recs)
	defer recs.Close()
	var out []string
	for recs.Next() {
		out = append(out, string(recs.Record()))
	}
	if err := recs.Err(); err != nil {
		out = append(out, "error: "+err.Error())
	}
	return out, notes.Dialect
}

// steady makes ADK event ids and timestamps repeatable.
func steady(r *Records) {
	if a, ok := r.emit.(*adkEmitter); ok {
		n := 0
		a.invocationID = "e-test"
		a.newID = func() string { n++; return fmt.Sprintf("ev-%d", n) }
		a.now = func() time.Time { return time.Unix(1754000000, 0) }
	}
}

// fixtures are every testdata/dialects/<dialect>/*.sse (an event stream)
// and *.txt (a text reply): a capture added there is replayed by the
// tests below with no code to write (run with -update once to write its
// golden file, and read it).
func fixtures(t testing.TB) []string {
	sse, err := filepath.Glob(filepath.Join("testdata", "dialects", "*", "*.sse"))
	txt, err2 := filepath.Glob(filepath.Join("testdata", "dialects", "*", "*.txt"))
	if err != nil || err2 != nil || len(sse) == 0 {
		t.Fatalf("no fixtures: %v %v", err, err2)
	}
	return append(sse, txt...)
}

// trimExt is a fixture's path without its extension.
func trimExt(file string) string { return strings.TrimSuffix(file, filepath.Ext(file)) }

func dialectOf(file string) config.Dialect { return config.Dialect(filepath.Base(filepath.Dir(file))) }

// headerOf is the reply header a fixture was captured with: the lines of
// <name>.header ("Name: value"), when there is one.
func headerOf(t testing.TB, file string) http.Header {
	h := http.Header{}
	if filepath.Ext(file) == ".sse" {
		h.Set("Content-Type", "text/event-stream")
	}
	b, err := os.ReadFile(trimExt(file) + ".header")
	if errors.Is(err, os.ErrNotExist) {
		return h
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return h
}

// TestGolden maps every fixture with emit text and emit adk and compares
// the lines with its golden file.
func TestGolden(t *testing.T) {
	for _, file := range fixtures(t) {
		t.Run(strings.TrimPrefix(file, filepath.Join("testdata", "dialects")+"/"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			for _, e := range []config.Emit{config.EmitText, config.EmitADK} {
				fmt.Fprintf(&got, "# emit %s\n", e)
				for _, l := range mapFixture(t, dialectOf(file), e, bytes.NewReader(src), headerOf(t, file)) {
					got.WriteString(l + "\n")
				}
			}
			golden := trimExt(file) + ".golden"
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if got.String() != string(want) {
				t.Errorf("%s mapped:\n%s\nwant (%s):\n%s", file, got.String(), golden, want)
			}
		})
	}
}

// TestSplits replays every fixture cut in two at every byte, and one byte
// at a time: the lines out never depend on how the reply was read.
func TestSplits(t *testing.T) {
	for _, file := range fixtures(t) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d, h := dialectOf(file), headerOf(t, file)
		want := merged(mapFixture(t, d, config.EmitText, bytes.NewReader(src), h))
		got := merged(mapFixture(t, d, config.EmitText, iotest.OneByteReader(bytes.NewReader(src)), h))
		if got != want {
			t.Errorf("%s one byte at a time:\n%s\nwant\n%s", file, got, want)
		}
		for i := 1; i < len(src); i++ {
			r := io.MultiReader(bytes.NewReader(src[:i]), bytes.NewReader(src[i:]))
			if got := merged(mapFixture(t, d, config.EmitText, r, h)); got != want {
				t.Fatalf("%s split at %d:\n%s\nwant\n%s", file, i, got, want)
			}
		}
	}
}

// merged joins lines, consecutive text lines into one: a text reply's
// chunks are cut where the reads fell, its text is the same.
func merged(lines []string) string {
	var out []string
	var text strings.Builder
	for _, l := range lines {
		var t struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal([]byte(l), &t) == nil && t.Text != nil && strings.HasPrefix(l, `{"text":`) {
			text.WriteString(*t.Text)
			continue
		}
		if text.Len() > 0 {
			out = append(out, "text: "+text.String())
			text.Reset()
		}
		out = append(out, l)
	}
	if text.Len() > 0 {
		out = append(out, "text: "+text.String())
	}
	return strings.Join(out, "\n")
}

// TestDetect: dialect auto places every fixture in its own dialect, maps
// it as the named dialect would, and notes it for the log line.
func TestDetect(t *testing.T) {
	for _, file := range fixtures(t) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d, h := dialectOf(file), headerOf(t, file)
		want := mapFixture(t, d, config.EmitText, bytes.NewReader(src), h)
		notes := &core.Notes{}
		c := core.Call{Method: &config.Method{Emit: config.EmitText}, Notes: notes}
		recs := Agent{}.Map(c, newFixtureRecords(bytes.NewReader(src), h))
		var got []string
		for recs.Next() {
			got = append(got, string(recs.Record()))
		}
		if err := recs.Err(); err != nil {
			got = append(got, "error: "+err.Error())
		}
		if notes.Dialect != string(d) {
			t.Errorf("%s: detected %q, want %q", file, notes.Dialect, d)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s auto:\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestDetectTable(t *testing.T) {
	vercel := http.Header{"X-Vercel-Ai-Ui-Message-Stream": {"v1"}}
	tests := []struct {
		header http.Header
		event  string
		rec    string
		want   config.Dialect
	}{
		{vercel, "", `{"type":"start"}`, config.DialectVercelUI},
		{nil, "", `{"type":"text-delta","id":"0","delta":"x"}`, config.DialectVercelUI},
		{nil, "response.created", `{"type":"response.created"}`, config.DialectOpenAIResponses},
		{nil, "", `{"type":"response.output_text.delta","delta":"x"}`, config.DialectOpenAIResponses},
		{nil, "", `{"id":"c","object":"chat.completion.chunk","choices":[]}`, config.DialectOpenAIChat},
		{nil, "metadata", `{"run_id":"r","attempt":1}`, config.DialectLangGraph},
		{http.Header{"Content-Location": {"/threads/t/runs/r"}}, "", `{"x":1}`, config.DialectLangGraph},
		{nil, "", `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`, config.DialectAGUI},
		{nil, "", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{}}}}`, config.DialectA2A},
		{nil, "", `{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}`, config.DialectA2A},
		{nil, "", `{"author":"a","content":{}}`, config.DialectADK},
		{nil, "", `{"invocation_id":"e","content":{}}`, config.DialectADK},
		{nil, "", `{"output":"hi"}`, config.DialectRaw},
		{nil, "", `{"message":"hello"}`, config.DialectRaw},
		{nil, "", `{"message":{"role":"user"}}`, config.DialectRaw},
		{nil, "", `{"message":{"role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`, config.DialectA2A},
		{nil, "", `{"task":"x"}`, config.DialectRaw},
		{nil, "", `{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}`, config.DialectA2A},
		{nil, "", `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, config.DialectRaw},
		{nil, "", `{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","status":{}}}`, config.DialectA2A},
		{nil, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}`, config.DialectA2A},
		{nil, "", `{"author":"bob","text":"hi"}`, config.DialectRaw},
		{nil, "", `[1,2]`, config.DialectRaw},
		{nil, "", `"text"`, config.DialectRaw},
	}
	for _, tt := range tests {
		if got := Detect(tt.header, []byte(tt.event), []byte(tt.rec)); got != tt.want {
			t.Errorf("Detect(%v, %q, %s) = %q, want %q", tt.header, tt.event, tt.rec, got, tt.want)
		}
	}
}

// TestUnplaced: a stream auto cannot place passes through unchanged.
func TestUnplaced(t *testing.T) {
	src := "data: {\"output\":\"a\"}\n\ndata: {\"n\":1}\n\ndata: plain\n\n"
	got := mapFixture(t, config.DialectAuto, config.EmitText, strings.NewReader(src), nil)
	want := []string{`{"output":"a"}`, `{"n":1}`, `{"output":"plain"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("unplaced stream = %q, want %q", got, want)
	}
}

// TestCollect: a unary method with emit text or adk answers the whole.
func TestCollect(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "dialects", "vercel-ui", "tools.sse"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		emit config.Emit
		want string
	}{
		{config.EmitText, `{"text":"It is 21°C in Paris.","tool_calls":[{"id":"call_1","name":"weather","args":{"city":"Paris"}}],"tool_results":[{"id":"call_1","name":"weather","output":{"temperature":21}}]}`},
		{config.EmitADK, `[{"author":"a","content":{"parts":[{"functionCall":{"args":{"city":"Paris"},"id":"call_1","name":"weather"}}],"role":"model"},"id":"ev-1","invocationId":"e-test","timestamp":1754000000},` +
			`{"author":"a","content":{"parts":[{"functionResponse":{"id":"call_1","name":"weather","response":{"temperature":21}}}],"role":"user"},"id":"ev-2","invocationId":"e-test","timestamp":1754000000},` +
			`{"author":"a","content":{"parts":[{"text":"It is 21°C in Paris."}],"role":"model"},"id":"ev-4","invocationId":"e-test","timestamp":1754000000}]`},
	} {
		c := core.Call{Method: &config.Method{Dialect: config.DialectVercelUI, Emit: tt.emit}}
		r := Agent{Author: "a"}.mapped(c, newFixtureRecords(bytes.NewReader(src), nil), true)
		steady(r)
		got, err := r.Collect()
		if err != nil || string(got) != tt.want {
			t.Errorf("Collect() emit %s = %s, %v\nwant %s", tt.emit, got, err, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("Collect() = %s, not JSON", got)
		}
	}
}

func testCall(d config.Dialect, e config.Emit) core.Call {
	return core.Call{Method: &config.Method{Dialect: d, Emit: e}}
}

// TestSnakeKeys: with adk.keys snake the ADK events use AdkApp's
// snake_case names; user data (args, response) keeps its own keys.
func TestSnakeKeys(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "dialects", "vercel-ui", "tools.sse"))
	if err != nil {
		t.Fatal(err)
	}
	r := Agent{SnakeKeys: true}.Map(testCall(config.DialectVercelUI, config.EmitADK), newFixtureRecords(bytes.NewReader(src), nil))
	steady(r)
	var got []string
	for r.Next() {
		got = append(got, string(r.Record()))
	}
	want := []string{
		`{"author":"agent","content":{"parts":[{"function_call":{"args":{"city":"Paris"},"id":"call_1","name":"weather"}}],"role":"model"},"id":"ev-1","invocation_id":"e-test","timestamp":1754000000}`,
		`{"author":"agent","content":{"parts":[{"function_response":{"id":"call_1","name":"weather","response":{"temperature":21}}}],"role":"user"},"id":"ev-2","invocation_id":"e-test","timestamp":1754000000}`,
		`{"author":"agent","content":{"parts":[{"text":"It is 21°C in Paris."}],"role":"model"},"id":"ev-3","invocation_id":"e-test","partial":true,"timestamp":1754000000}`,
		`{"author":"agent","content":{"parts":[{"text":"It is 21°C in Paris."}],"role":"model"},"id":"ev-4","invocation_id":"e-test","timestamp":1754000000}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || r.Err() != nil {
		t.Errorf("snake ADK events =\n%s\n(err %v) want\n%s", strings.Join(got, "\n"), r.Err(), strings.Join(want, "\n"))
	}
}

// TestCollectCap: a unary method's mapped reply is capped as a unary
// reply is.
func TestCollectCap(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "dialects", "vercel-ui", "tools.sse"))
	if err != nil {
		t.Fatal(err)
	}
	r := Agent{}.mapped(testCall(config.DialectVercelUI, config.EmitText), newFixtureRecords(bytes.NewReader(src), nil), true)
	r.maxReply = 100
	if out, err := r.Collect(); !errors.Is(err, core.ErrReplyTooLarge) {
		t.Errorf("Collect() over the cap = %s, %v, want ErrReplyTooLarge", out, err)
	}
}
