package devapi

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestQuery: :query answers the container's {"output": …}, for both API
// versions and both spellings of the method's key; the input reaches
// the agent with its numbers carried as doubles, as a protobuf Struct
// carries them.
func TestQuery(t *testing.T) {
	st := newStack(t, Options{})
	for _, tt := range []struct{ version, key string }{{"v1", "class_method"}, {"v1beta1", "classMethod"}} {
		code, h, body := postRead(t, st.dev+engine(tt.version, "query"),
			`{"`+tt.key+`": "echo", "input": {"s": "<&>", "n": 3, "big": 12345678901234567890}}`)
		want := `{"output":{"content_type":"application/json","input":{"big":12345678901234567000,"n":3,"s":"<&>"}}}` + "\n"
		if code != 200 || body != want || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %q %q\nwant 200 %q", tt.version, tt.key, code, h.Get("Content-Type"), body, want)
		}
	}
	// No input, and a null one: {}.
	for _, body := range []string{`{"class_method": "echo"}`, `{"classMethod": "echo", "input": null}`} {
		if code, _, got := postRead(t, st.dev+engine("v1", "query"), body); code != 200 || !strings.Contains(got, `"input":{}`) {
			t.Errorf("%s: %d %s", body, code, got)
		}
	}
	// What the platform's JSON parser refuses never reaches the sidecar.
	for _, tt := range []struct{ body, want string }{
		{`{"class_method": "echo", "inputs": {}}`, `Unknown name \"inputs\"`},
		{`{"class_method": "echo", "input": [1]}`, `Invalid value at 'input'`},
		{`{"class_method": 7}`, `Invalid value at 'class_method'`},
		{`not json`, `Invalid JSON payload received.`},
	} {
		code, _, got := postRead(t, st.dev+engine("v1", "query"), tt.body)
		if code != 400 || !strings.Contains(got, tt.want) || !strings.Contains(got, `"status":"INVALID_ARGUMENT"`) {
			t.Errorf("%s: %d %s, want 400 INVALID_ARGUMENT %s", tt.body, code, got, tt.want)
		}
	}
}

// TestStreamQueryLinesAsTheyCome: each line reaches the caller while the
// agent still holds the next one.
func TestStreamQueryLinesAsTheyCome(t *testing.T) {
	st := newStack(t, Options{})
	for _, q := range []string{"", "?alt=sse"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp := post(t, ctx, st.dev+engine("v1", "streamQuery")+q, `{"class_method": "stream", "input": {"lines": 2, "hold": true}}`)
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%q: %d %s", q, resp.StatusCode, b)
		}
		br := bufio.NewReader(resp.Body)
		first, err := br.ReadString('\n')
		if err != nil || !strings.Contains(first, `"n":0`) {
			t.Fatalf("%q: first line %q, %v", q, first, err)
		}
		// Only now does the agent write the second.
		if code, _, b := postRead(t, st.agent+"/release", `{}`); code != 200 {
			t.Fatalf("release: %d %s", code, b)
		}
		rest, err := io.ReadAll(br)
		if err != nil || !strings.Contains(string(rest), `"n":1`) {
			t.Errorf("%q: after the release %q, %v", q, rest, err)
		}
	}
}

// TestStreamQueryFramings: the exact bytes of each framing, built from
// the lines the contract route itself answers.
func TestStreamQueryFramings(t *testing.T) {
	st := newStack(t, Options{})
	const call = `{"class_method": "stream", "input": {"lines": 3}}`
	code, _, direct := postRead(t, st.contract+"/api/stream_reasoning_engine", call)
	lines := strings.Split(strings.TrimSuffix(direct, "\n"), "\n")
	if code != 200 || len(lines) != 3 {
		t.Fatalf("the contract route: %d %q", code, direct)
	}

	code, h, got := postRead(t, st.dev+engine("v1", "streamQuery"), call)
	if code != 200 || got != direct || h.Get("Content-Type") != "application/json" {
		t.Errorf("plain: %d %q %q, want the contract's %q", code, h.Get("Content-Type"), got, direct)
	}

	var sse strings.Builder
	for _, l := range lines {
		sse.WriteString("data: " + l + "\n\n")
	}
	code, h, got = postRead(t, st.dev+engine("v1", "streamQuery")+"?alt=sse", call)
	if code != 200 || got != sse.String() || h.Get("Content-Type") != "text/event-stream" {
		t.Errorf("alt=sse: %d %q %q, want %q", code, h.Get("Content-Type"), got, sse.String())
	}

	// The Node client's framing: a JSON array of google.api.HttpBody.
	for _, q := range []string{"?$alt=json;enum-encoding=int", "?%24alt=json%3Benum-encoding%3Dint"} {
		code, _, got = postRead(t, st.dev+engine("v1", "streamQuery")+q, call)
		var bodies []struct {
			ContentType string `json:"contentType"`
			Data        string `json:"data"`
		}
		if err := json.Unmarshal([]byte(got), &bodies); code != 200 || err != nil || len(bodies) != len(lines) {
			t.Fatalf("%s: %d %v %s", q, code, err, got)
		}
		for i, b := range bodies {
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil || string(data) != lines[i] || b.ContentType == "" {
				t.Errorf("%s: element %d = %q %q, want %q", q, i, b.ContentType, data, lines[i])
			}
		}
	}
}

// TestContainerErrors: a non-2xx from the container is the platform's 400
// FAILED_PRECONDITION ending with the container's body, on both verbs; a
// stream that fails after its first line ends with the sidecar's final
// error line, which alt=sse frames as an event.
func TestContainerErrors(t *testing.T) {
	st := newStack(t, Options{})
	for _, tt := range []struct{ verb, route, body string }{
		{"query", "/api/reasoning_engine", `{"class_method": "fail", "input": {"why": "no luck"}}`},
		{"query", "/api/reasoning_engine", `{"class_method": "nope"}`},
		{"streamQuery", "/api/stream_reasoning_engine", `{"class_method": "echo"}`},
	} {
		dcode, _, direct := postRead(t, st.contract+tt.route, tt.body)
		if dcode < 400 {
			t.Fatalf("%s: the contract route answered %d %s", tt.body, dcode, direct)
		}
		code, h, got := postRead(t, st.dev+engine("v1", tt.verb), tt.body)
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(got), &e); err != nil || code != 400 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("%s: %d %q %s (%v)", tt.body, code, h.Get("Content-Type"), got, err)
		}
		if e.Error.Code != 400 || e.Error.Status != "FAILED_PRECONDITION" ||
			!strings.HasSuffix(e.Error.Message, "Error Details: "+strings.TrimRight(direct, "\n")) ||
			!strings.Contains(e.Error.Message, "FAILED_PRECONDITION") {
			t.Errorf("%s: %+v\nwant the message to end with Error Details: %s", tt.body, e.Error, direct)
		}
	}

	code, _, got := postRead(t, st.dev+engine("v1", "streamQuery")+"?alt=sse", `{"class_method": "stream", "input": {"lines": 1, "fail": true}}`)
	events := strings.Split(strings.TrimSuffix(got, "\n\n"), "\n\n")
	if code != 200 || len(events) != 2 || !strings.HasPrefix(events[1], `data: {"error":{`) || !strings.HasSuffix(got, "}\n\n") {
		t.Errorf("a failed stream: %d %q, want a line then a final data: {\"error\":{…}} event", code, got)
	}
}

// TestUnknownPaths: what is not the platform's REST surface is a 404 in
// its error shape; a wrong verb is 405.
func TestUnknownPaths(t *testing.T) {
	st := newStack(t, Options{})
	for _, p := range []string{
		engine("v1", "fooQuery"), engine("v2", "query"), "/v1/projects/p/locations/l/reasoningEngines/:query",
		"/v1/projects/p/locations/l/reasoningEngines/1", "/api/reasoning_engine", "/nope",
	} {
		code, _, got := postRead(t, st.dev+p, `{}`)
		if code != 404 || !strings.Contains(got, `"status":"NOT_FOUND"`) || !strings.Contains(got, `"code":404`) {
			t.Errorf("POST %s: %d %s", p, code, got)
		}
	}
	for _, tt := range []struct{ method, path, allow string }{
		{"GET", engine("v1", "query"), "POST"}, {"PUT", engine("v1beta1", "streamQuery"), "POST"},
		{"POST", "/", "GET, HEAD"}, {"DELETE", "/playground/methods.json", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(tt.method, st.dev+tt.path, nil)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != tt.allow || !strings.Contains(string(b), `"code":405`) {
			t.Errorf("%s %s: %d Allow %q %s", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
}

// TestCut: a stream still running at the cut is severed, as the platform
// severs it at 15 minutes: the caller gets the lines so far, then a
// broken connection, not a clean end.
func TestCut(t *testing.T) {
	st := newStack(t, Options{Cut: 700 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	begun := time.Now()
	resp := post(t, ctx, st.dev+engine("v1", "streamQuery"), `{"class_method": "stream", "input": {"lines": 2, "hold": true}}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if first, err := br.ReadString('\n'); err != nil || !strings.Contains(first, `"n":0`) {
		t.Fatalf("first line %q, %v", first, err)
	}
	rest, err := io.ReadAll(br)
	if err == nil || len(rest) != 0 {
		t.Errorf("after the cut: %q, %v; want a broken connection", rest, err)
	}
	if d := time.Since(begun); d < 700*time.Millisecond || d > 10*time.Second {
		t.Errorf("cut after %v, want 700ms", d)
	}
}

// TestContentTypeToContainer: the contract route gets the platform's
// duplicated Content-Type, or a single one with SingleContentType.
func TestContentTypeToContainer(t *testing.T) {
	got := make(chan string, 1)
	contract := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- strings.Join(r.Header.Values("Content-Type"), " | ")
		w.Write([]byte(`{"output": 1}`))
	}))
	defer contract.Close()
	for _, tt := range []struct {
		opts Options
		want string
	}{{Options{}, "application/json,application/json"}, {Options{SingleContentType: true}, "application/json"}} {
		dev := httptest.NewServer(New(newStackConfig(t), contract.URL, tt.opts))
		code, _, body := postRead(t, dev.URL+engine("v1", "query"), `{"class_method": "echo"}`)
		dev.Close()
		if code != 200 || body != "{\"output\":1}\n" {
			t.Errorf("%+v: %d %s", tt.opts, code, body)
		}
		if ct := <-got; ct != tt.want {
			t.Errorf("%+v: the container got Content-Type %q, want %q", tt.opts, ct, tt.want)
		}
	}
}

// TestServerTimingPassedOn: the contract's Server-Timing reaches the
// REST caller on :query, on :streamQuery's head and on a container's
// error, for the playground to draw: queue, connect and agent, the
// agent's at least the time it waited before its head.
func TestServerTimingPassedOn(t *testing.T) {
	st := newStack(t, Options{})
	const think = 100 * time.Millisecond
	for _, tt := range []struct{ verb, body string }{
		{"query", `{"class_method": "echo", "input": {"think_ms": 100}}`},
		{"streamQuery?alt=sse", `{"class_method": "stream", "input": {"lines": 2, "think_ms": 100}}`},
		{"query", `{"class_method": "fail", "input": {"think_ms": 100}}`},
	} {
		_, h, body := postRead(t, st.dev+engine("v1", tt.verb), tt.body)
		v := h.Get("Server-Timing")
		var names []string
		var agent time.Duration
		for _, e := range strings.Split(v, ", ") {
			name, dur, _ := strings.Cut(e, ";dur=")
			ms, err := strconv.ParseFloat(dur, 64)
			if err != nil {
				t.Errorf("%s %s: Server-Timing %q: entry %q has no dur", tt.verb, tt.body, v, e)
			}
			names = append(names, name)
			if name == "agent" {
				agent = time.Duration(ms * float64(time.Millisecond))
			}
		}
		if strings.Join(names, ",") != "queue,connect,agent" || agent < think {
			t.Errorf("%s %s: Server-Timing %q (reply %q), want queue, connect and agent of at least %v", tt.verb, tt.body, v, body, think)
		}
	}
}
