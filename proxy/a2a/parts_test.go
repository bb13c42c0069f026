package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
	"github.com/sidecar-dev/sidecar/state"
	"github.com/sidecar-dev/sidecar/upstream"
)

// partsMap is the method map of the parts tests: parts.py's routes.
const partsMap = `
upstream: {url: AGENT}
methods:
  echo: {mode: stream, call: POST /echo, reply: sse}
  echo_text: {mode: stream, call: POST /echo, reply: sse, emit: text}
  image: {mode: stream, call: POST /image, reply: sse}
  image_text: {mode: stream, call: POST /image, reply: sse, emit: text}
  bad: {mode: stream, call: POST /bad, reply: sse}
  unary: {call: POST /unary}
  whole: {call: POST /chat, reply: sse, emit: text}
limits: {request_bytes: 1MiB, parts: {bytes: 64KiB, total: 96KiB}}
`

// serveParts runs the sidecar's A2A door calling method of partsMap
// (limits replaced by limits, when not ""), in front of a new parts.py,
// and returns its URL.
func serveParts(t *testing.T, method, limits string) string {
	t.Helper()
	m := partsMap
	if limits != "" {
		m = strings.Replace(m, "limits: {request_bytes: 1MiB, parts: {bytes: 64KiB, total: 96KiB}}", limits, 1)
	}
	url, _, _ := serveMap(t, method, m, doortest.StartPython(t, "testdata/a2a/parts.py"))
	return url
}

// inPart is a part of a caller's message, whatever the way's shape: text,
// bytes (base64), a uri, or data (JSON).
type inPart struct {
	text, bytes, uri, data string
	mime, name             string
}

// way is one binding and version a caller talks to the door with.
type way struct {
	name    string
	version string // the A2A-Version header
	rest    bool
	shape   version // the parts' shape: v03, v10 or p03
}

var ways = []way{
	{"JSON-RPC 0.3", "", false, v03},
	{"JSON-RPC 1.0", "1.0", false, v10},
	{"HTTP+JSON 0.3", "", true, p03},
	{"HTTP+JSON 1.0", "1.0", true, v10},
}

// partJSON is p in shape v.
func partJSON(v version, p inPart) string {
	opt := func(name, value string) string {
		if value == "" {
			return ""
		}
		return `,"` + name + `":` + quote(value)
	}
	switch {
	case p.data != "" && v == v03:
		return `{"kind":"data","data":` + p.data + `}`
	case p.data != "" && v == p03:
		return `{"data":{"data":` + p.data + `}}`
	case p.data != "":
		return `{"data":` + p.data + `}`
	case p.bytes != "" || p.uri != "":
		key, value := map[version][2]string{v03: {"bytes", "uri"}, p03: {"fileWithBytes", "fileWithUri"}, v10: {"raw", "url"}}[v], p.bytes
		k := key[0]
		if p.uri != "" {
			k, value = key[1], p.uri
		}
		if v == v10 {
			return `{"` + k + `":` + quote(value) + opt("mediaType", p.mime) + opt("filename", p.name) + `}`
		}
		file := `{"` + k + `":` + quote(value) + opt("mimeType", p.mime) + opt("name", p.name) + `}`
		if v == v03 {
			return `{"kind":"file","file":` + file + `}`
		}
		return `{"file":` + file + `}`
	case v == v03:
		return `{"kind":"text","text":` + quote(p.text) + `}`
	}
	return `{"text":` + quote(p.text) + `}`
}

// sendParts sends a message of ps the way w says, streamed when stream,
// and returns the response.
func sendParts(t *testing.T, url string, w way, stream bool, ps ...inPart) *http.Response {
	t.Helper()
	resp, err := testClient.Do(partsRequest(url, w, stream, ps...))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// partsRequest is the request of a message of ps, the way w says.
func partsRequest(url string, w way, stream bool, ps ...inPart) *http.Request {
	list := make([]string, len(ps))
	for i, p := range ps {
		list[i] = partJSON(w.shape, p)
	}
	parts := strings.Join(list, ",")
	var path, body string
	switch {
	case w.rest && w.shape == p03:
		path, body = "/v1/message:send", `{"message":{"role":"ROLE_USER","messageId":"m1","content":[`+parts+`]}}`
	case w.rest:
		path, body = "/message:send", `{"message":{"role":"ROLE_USER","messageId":"m1","parts":[`+parts+`]}}`
	case w.shape == v03:
		path, body = "/", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[`+parts+`]}}}`
	default:
		path, body = "/", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1","parts":[`+parts+`]}}}`
	}
	if stream {
		path = strings.Replace(path, ":send", ":stream", 1)
		body = strings.Replace(strings.Replace(body, `"message/send"`, `"message/stream"`, 1), `"SendMessage"`, `"SendStreamingMessage"`, 1)
	}
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if w.version != "" {
		req.Header.Set("A2A-Version", w.version)
	}
	return req
}

// outPart is a part of an answer, whatever its shape.
type outPart struct {
	Kind                         string // text, file or data
	Text, Bytes, URI, MIME, Name string
	Data                         string // compact JSON
}

// answered is what a caller reads of a task: its last state, its status
// message's text, and its artifact's parts (consecutive text parts
// joined, as a streamed artifact's appends are).
type answered struct {
	id, state, message string
	parts              []outPart
}

// readAnswer reads a message's response (a Task, or a stream of events),
// or fails the test.
func readAnswer(t *testing.T, resp *http.Response) answered {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var objs []map[string]any
	add := func(data []byte) {
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%.300s: %v", data, err)
		}
		if v["jsonrpc"] != nil {
			if v["error"] != nil {
				t.Fatalf("error %v", v["error"])
			}
			v, _ = v["result"].(map[string]any)
		}
		for _, k := range []string{"task", "statusUpdate", "artifactUpdate"} {
			if inner, ok := v[k].(map[string]any); ok {
				v = inner
			}
		}
		objs = append(objs, v)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r := bufio.NewReaderSize(resp.Body, 1<<16)
		for {
			line, err := r.ReadString('\n')
			if data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: "); ok {
				add([]byte(data))
			}
			if err != nil {
				break
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		add(b)
	}
	var a answered
	for _, o := range objs {
		if id, ok := o["id"].(string); ok {
			a.id = id
		}
		if st, ok := o["status"].(map[string]any); ok {
			a.state, _ = st["state"].(string)
			if m, ok := st["message"].(map[string]any); ok {
				a.message = ""
				for _, p := range partsOf(m) {
					a.message += p.Text
				}
			}
		}
		var arts []any
		if as, ok := o["artifacts"].([]any); ok {
			arts = as
		}
		if art, ok := o["artifact"].(map[string]any); ok {
			arts = append(arts, art)
		}
		for _, art := range arts {
			for _, p := range partsOf(art.(map[string]any)) {
				if n := len(a.parts); p.Kind == "text" && n > 0 && a.parts[n-1].Kind == "text" {
					a.parts[n-1].Text += p.Text
					continue
				}
				a.parts = append(a.parts, p)
			}
		}
	}
	return a
}

// partsOf are the parts of a message or an artifact, in any version's
// shape.
func partsOf(obj map[string]any) []outPart {
	list, _ := obj["parts"].([]any)
	if c, ok := obj["content"].([]any); ok && list == nil {
		list = c
	}
	var out []outPart
	for _, e := range list {
		p := e.(map[string]any)
		s := func(m map[string]any, keys ...string) string {
			for _, k := range keys {
				if v, ok := m[k].(string); ok {
					return v
				}
			}
			return ""
		}
		switch {
		case p["text"] != nil:
			out = append(out, outPart{Kind: "text", Text: s(p, "text")})
		case p["file"] != nil:
			f := p["file"].(map[string]any)
			out = append(out, outPart{Kind: "file", Bytes: s(f, "bytes", "fileWithBytes"), URI: s(f, "uri", "fileWithUri"), MIME: s(f, "mimeType"), Name: s(f, "name")})
		case p["raw"] != nil || p["url"] != nil:
			out = append(out, outPart{Kind: "file", Bytes: s(p, "raw"), URI: s(p, "url"), MIME: s(p, "mediaType"), Name: s(p, "filename")})
		case p["data"] != nil:
			d := p["data"]
			if _, isData := p["kind"]; !isData && p["mediaType"] == nil { // 0.3's HTTP+JSON: {"data": {"data": …}}
				d = d.(map[string]any)["data"]
			}
			b, _ := json.Marshal(d)
			out = append(out, outPart{Kind: "data", Data: string(b)})
		}
	}
	return out
}

// pngBytes is the base64 of a PNG of 108 bytes (its signature, then
// zeros), as a caller sends it.
var pngBytes = func() string {
	b := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 100)...)
	return base64.StdEncoding.EncodeToString(b)
}()

// TestPartsInAndOut: in every binding and version, sent and streamed, a
// message's file parts (bytes and URI) and data part reach the agent in
// its input's parts, in the one shape, the bytes' base64 the caller's own;
// the agent's part records come back as the artifact's file and data
// parts, in order with its text, the base64 as the agent wrote it: the
// caller's image echoed whole, and the image it made.
func TestPartsInAndOut(t *testing.T) {
	for _, method := range []string{"echo", "echo_text"} {
		url := serveParts(t, method, "")
		for _, w := range ways {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s %s stream=%v", method, w.name, stream), func(t *testing.T) {
					resp := sendParts(t, url, w, stream,
						inPart{text: "what is this?"},
						inPart{bytes: pngBytes, mime: "image/png", name: "a.png"},
						inPart{uri: "https://files.example/report.pdf", mime: "application/pdf", name: "report.pdf"},
						inPart{data: `{"total":12.5,"currency":"EUR"}`})
					a := readAnswer(t, resp)
					if a.state != "completed" && a.state != "TASK_STATE_COMPLETED" {
						t.Fatalf("the task is %s (%s), want completed", a.state, a.message)
					}
					said := "got 3 parts:\ninline image/png a.png 108\nfile application/pdf https://files.example/report.pdf\ndata {\"total\":12.5,\"currency\":\"EUR\"}"
					if len(a.parts) != 6 {
						t.Fatalf("the artifact's parts are %+v, want 6", a.parts)
					}
					want := []outPart{
						{Kind: "text", Text: said},
						{Kind: "file", Bytes: pngBytes, MIME: "image/png", Name: "a.png"},
						{Kind: "file", URI: "https://files.example/report.pdf", MIME: "application/pdf", Name: "report.pdf"},
						{Kind: "data", Data: `{"currency":"EUR","total":12.5}`},
					}
					for i, p := range want {
						if a.parts[i] != p {
							t.Errorf("part %d = %+v, want %+v", i, a.parts[i], p)
						}
					}
					if dot := a.parts[4]; dot.Kind != "file" || dot.MIME != "image/png" || dot.Name != "dot.png" || len(dot.Bytes) < 60 {
						t.Errorf("part 4 = %+v, want the agent's dot.png", dot)
					} else if b, err := base64.StdEncoding.Strict().DecodeString(dot.Bytes); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
						t.Errorf("dot.png's bytes: %v", err)
					}
					if last := a.parts[5]; last.Kind != "text" || last.Text != "done" {
						t.Errorf("the last part = %+v, want the text done", last)
					}
				})
			}
		}
	}
}

// refusal is what a refused message's response says: its HTTP status,
// its JSON-RPC code (0 over HTTP+JSON), its ErrorInfo reason (HTTP+JSON)
// and its message.
type refusal struct {
	status, code    int
	reason, message string
}

func readRefusal(t *testing.T, resp *http.Response) refusal {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		Error struct {
			Code    int
			Message string
			Details []struct{ Reason string }
		}
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%d %.300s: %v", resp.StatusCode, b, err)
	}
	r := refusal{status: resp.StatusCode, message: v.Error.Message}
	if len(v.Error.Details) > 0 {
		r.reason = v.Error.Details[0].Reason
	} else {
		r.code = v.Error.Code
	}
	return r
}

// TestPartsRefused: a message whose part is over limits.parts.bytes, or
// whose parts are over limits.parts.total, whose base64 is not base64,
// whose media type holds a CR LF, whose data URL names another type than
// its bytes, or whose bytes name no type, is refused before the agent is
// called, saying why: over JSON-RPC -32602, over HTTP+JSON 413
// PART_TOO_LARGE for the sizes and 400 INVALID_PARAMS for the rest.
func TestPartsRefused(t *testing.T) {
	url := serveParts(t, "echo", "")
	big := func(n int) string {
		return base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, n-8)...))
	}
	tests := []struct {
		name  string
		parts []inPart
		large bool
		want  string
	}{
		{"one over bytes", []inPart{{bytes: big(70 << 10), mime: "image/png"}}, true, "limits.parts.bytes (65536)"},
		{"all over total", []inPart{{text: "two"}, {bytes: big(50 << 10), mime: "image/png"}, {bytes: big(50 << 10), mime: "image/png"}}, true, "limits.parts.total (98304)"},
		{"not base64", []inPart{{bytes: "iVBORw0K*GgoAAAA", mime: "image/png"}}, false, "not base64"},
		{"CR LF in the type", []inPart{{bytes: pngBytes, mime: "image/png\r\nX-Injected: 1"}}, false, "control character"},
		{"a data URL of another type", []inPart{{uri: "data:image/jpeg;base64," + pngBytes}}, false, "the bytes are image/png, not image/jpeg"},
		{"bytes of no type", []inPart{{bytes: pngBytes}}, false, "mime_type is missing"},
		{"a URI that is none", []inPart{{uri: "report.pdf"}}, false, "not an absolute URI"},
	}
	for _, tt := range tests {
		for _, w := range ways {
			t.Run(tt.name+" "+w.name, func(t *testing.T) {
				r := readRefusal(t, sendParts(t, url, w, false, tt.parts...))
				if !strings.Contains(r.message, tt.want) {
					t.Errorf("the refusal says %q, want %q in it", r.message, tt.want)
				}
				switch {
				case !w.rest && (r.status != 200 || r.code != codeInvalidParams):
					t.Errorf("JSON-RPC: %d %d, want 200 and %d", r.status, r.code, codeInvalidParams)
				case w.rest && tt.large && (r.status != 413 || r.reason != "PART_TOO_LARGE"):
					t.Errorf("HTTP+JSON: %d %s, want 413 PART_TOO_LARGE", r.status, r.reason)
				case w.rest && !tt.large && (r.status != 400 || r.reason != "INVALID_PARAMS"):
					t.Errorf("HTTP+JSON: %d %s, want 400 INVALID_PARAMS", r.status, r.reason)
				}
			})
		}
	}
}

// TestPartsAgentFails: an agent's part over limits.parts.bytes fails the
// task with PART_TOO_LARGE, and a malformed one (a media type holding a
// CR LF) with BAD_REPLY, as other agent errors do: sent or streamed,
// raw records or the mapping stage's, in every binding and version, the
// text before it kept.
func TestPartsAgentFails(t *testing.T) {
	tests := []struct{ method, want string }{
		{"image", "limits.parts"},
		{"image_text", "limits.parts"},
		{"bad", "control character"},
	}
	for _, tt := range tests {
		url := serveParts(t, tt.method, "")
		for _, w := range ways {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s %s stream=%v", tt.method, w.name, stream), func(t *testing.T) {
					a := readAnswer(t, sendParts(t, url, w, stream, inPart{text: "draw"}))
					if a.state != "failed" && a.state != "TASK_STATE_FAILED" || !strings.Contains(a.message, tt.want) {
						t.Errorf("the task is %s saying %q, want failed saying %q", a.state, a.message, tt.want)
					}
					if len(a.parts) != 1 || a.parts[0].Text != "here:" {
						t.Errorf("the artifact is %+v, want the text before the part", a.parts)
					}
				})
			}
		}
	}
}

// getParts reads task id back the way w says: tasks/get, GetTask, GET
// /v1/tasks/{id} (0.3's HTTP+JSON) or GET /tasks/{id}.
func getParts(t *testing.T, url string, w way, id string) answered {
	t.Helper()
	var req *http.Request
	switch {
	case w.rest && w.shape == p03:
		req, _ = http.NewRequest(http.MethodGet, url+"/v1/tasks/"+id, nil)
	case w.rest:
		req, _ = http.NewRequest(http.MethodGet, url+"/tasks/"+id, nil)
	default:
		method := map[version]string{v03: "tasks/get", v10: "GetTask"}[w.shape]
		req, _ = http.NewRequest(http.MethodPost, url+"/", strings.NewReader(taskReq(method, id)))
		req.Header.Set("Content-Type", "application/json")
	}
	if w.version != "" {
		req.Header.Set("A2A-Version", w.version)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, resp)
}

// TestPartsKept: the task keeps its artifact's file and data parts, and
// GetTask answers them as the stream did, the base64 as the agent wrote
// it, in every binding and version; a unary method's output that is a
// part record is the artifact's one file part, and the mapping stage's
// whole answer (emit: text) its text, then its parts.
func TestPartsKept(t *testing.T) {
	url := serveParts(t, "echo", "")
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			streamed := readAnswer(t, sendParts(t, url, w, true, inPart{text: "keep"}, inPart{bytes: pngBytes, mime: "image/png", name: "a.png"}))
			got := getParts(t, url, w, streamed.id)
			if len(got.parts) != 4 || fmt.Sprint(got.parts) != fmt.Sprint(streamed.parts) {
				t.Errorf("GetTask's parts = %+v, want the stream's %+v", got.parts, streamed.parts)
			}
		})
	}
	url, whole := serveParts(t, "unary", ""), serveParts(t, "whole", "")
	for _, w := range ways {
		t.Run("unary "+w.name, func(t *testing.T) {
			a := readAnswer(t, sendParts(t, url, w, false, inPart{text: "draw"}))
			if len(a.parts) != 1 || a.parts[0].Kind != "file" || a.parts[0].Name != "dot.png" || a.parts[0].MIME != "image/png" {
				t.Errorf("the artifact is %+v, want dot.png", a.parts)
			}
			a = readAnswer(t, sendParts(t, whole, w, false, inPart{text: "draw"}))
			if len(a.parts) != 2 || a.parts[0].Text != "look:" || a.parts[1].Name != "dot.png" {
				t.Errorf("the whole answer's artifact is %+v, want its text, then dot.png", a.parts)
			}
		})
	}
}

// TestReplicasParts: with the tasks in Redis, a task streamed on A that
// answered an image is read back on B, GetTask and HTTP+JSON, with the
// image's base64 as the agent wrote it.
func TestReplicasParts(t *testing.T) {
	srv := redistest.Start(t)
	agent := doortest.StartPython(t, "testdata/a2a/parts.py")
	replica := func() string {
		store, err := state.Open(config.State{Store: config.StoreRedis, Redis: config.RedisState{
			URL: srv.URL(), KeyPrefix: "sc", TaskTTL: time.Hour, Lease: 15 * time.Second}}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(partsMap, "AGENT", agent)))
		if err != nil {
			t.Fatal(err)
		}
		client, err := upstream.New(cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		door := newDoor(t, cfg, Options{Method: "echo", Store: store, Card: CardInfo{Name: "Parts agent"}})
		t.Cleanup(func() { door.Close() })
		s := &proxy.Server{Config: cfg, Agent: dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}}
		hs := httptest.NewServer(s.HandlerFor(door))
		t.Cleanup(func() {
			hs.CloseClientConnections()
			hs.Close()
			client.Close()
		})
		return hs.URL
	}
	a, b := replica(), replica()
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			streamed := readAnswer(t, sendParts(t, a, w, true, inPart{text: "keep"}, inPart{bytes: pngBytes, mime: "image/png", name: "a.png"}, inPart{data: `[1,2]`}))
			if len(streamed.parts) != 5 {
				t.Fatalf("the stream's parts = %+v, want 5", streamed.parts)
			}
			eventually(t, "the task in Redis", func() bool {
				got := getParts(t, b, w, streamed.id)
				return got.state == streamed.state && fmt.Sprint(got.parts) == fmt.Sprint(streamed.parts)
			})
		})
	}
}

// allocated is what the process has allocated in all, after a collection.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestPartsHostile: a message of 10,000 tiny parts is served, each part
// reaching the agent; a 5 MiB image near limits.request_bytes (8 MiB)
// reaches the agent while the sidecar allocates at most 3 times its base64
// in all (the body read, the input written; about 2 measured); a 200 MB part sent chunked is refused 413 once the body passes
// limits.request_bytes, never held.
func TestPartsHostile(t *testing.T) {
	const limits = "limits: {request_bytes: 8MiB, parts: {bytes: 5MiB, total: 16MiB}}"
	url := serveParts(t, "echo", limits)
	tiny := make([]inPart, 10000)
	for i := range tiny {
		tiny[i] = inPart{data: `{}`}
	}
	a := readAnswer(t, sendParts(t, url, ways[0], false, append([]inPart{{text: "many"}}, tiny...)...))
	if len(a.parts) != 10003 || !strings.HasPrefix(a.parts[0].Text, "got 10000 parts:\ndata {}\n") {
		t.Errorf("10,000 parts: the artifact has %d parts, want 10,003 (the agent got them all)", len(a.parts))
	}

	url = serveParts(t, "unary", limits)
	image := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 5<<20-8)...))
	for _, w := range ways {
		req := partsRequest(url, w, false, inPart{text: "look"}, inPart{bytes: image, mime: "image/png"})
		before := allocated()
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		a := readAnswer(t, resp)
		used := allocated() - before
		if len(a.parts) != 1 || a.parts[0].Name != "dot.png" {
			t.Errorf("%s: the answer to a 5 MiB image is %+v, want dot.png", w.name, a.parts)
		}
		t.Logf("%s: a 5 MiB image in: %.1f MB allocated, %.1fx its base64", w.name, float64(used)/1e6, float64(used)/float64(len(image)))
		if used > 3*uint64(len(image)) && !raceEnabled {
			t.Errorf("%s: a 5 MiB image in allocated %d bytes, more than 3x its base64 (%d)", w.name, used, len(image))
		}
	}

	before := allocated()
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"file","file":{"mimeType":"image/png","bytes":"`))
		chunk := bytes.Repeat([]byte("AAAA"), 16<<10)
		for range 200 << 20 / len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return // the door stopped reading
			}
		}
		pw.Write([]byte(`"}}]}}}`))
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, url+"/", pr)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		t.Fatalf("a 200 MB part: %v", err)
	}
	r := readRefusal(t, resp)
	if r.status != 413 || r.code != codeInvalidRequest {
		t.Errorf("a 200 MB part: %d %d %q, want 413 and %d", r.status, r.code, r.message, codeInvalidRequest)
	}
	if used := allocated() - before; used > 32<<20 && !raceEnabled {
		t.Errorf("a 200 MB part refused: %d bytes allocated, want at most 32 MiB", used)
	}
}

// zeros counts the longest run of "A" in what is written to it: the
// base64 of the zeros parts.py's image is made of, read as it streams.
type zeros struct{ run, longest int }

func (z *zeros) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == 'A' {
			z.run++
			z.longest = max(z.longest, z.run)
		} else {
			z.run = 0
		}
	}
	return len(p), nil
}

// TestPartsOutMemory: a 5 MiB image from the agent, sent and streamed in
// every binding and version, reaches the caller whole while the sidecar
// allocates at most 3.6 times its base64 in all, the test's client
// reading it as it streams. Measured, 3.1 times: the agent's record read
// (upstream's record buffer, grown to limits.record_bytes), the task's
// copy once; message/send writes the task from its copy, and
// message/stream its artifact-update (frames.Hooks.RecordTo), a piece at
// a time. Building the stream's frame whole cost 1 time more.
func TestPartsOutMemory(t *testing.T) {
	url := serveParts(t, "image", "limits: {request_bytes: 1MiB, parts: {bytes: 5MiB, total: 16MiB}}")
	const size = 5 << 20
	b64 := base64.StdEncoding.EncodedLen(size)
	for _, w := range ways {
		for _, stream := range []bool{false, true} {
			req := partsRequest(url, w, stream, inPart{text: "draw"})
			before := allocated()
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var z zeros
			io.Copy(&z, resp.Body)
			resp.Body.Close()
			used := allocated() - before
			if resp.StatusCode != 200 || z.longest < b64-16 {
				t.Fatalf("%s stream=%v: %d, the image's zeros %d base64 characters, want %d", w.name, stream, resp.StatusCode, z.longest, b64-12)
			}
			t.Logf("%s stream=%v: a 5 MiB image out: %.1f MB allocated, %.1fx its base64", w.name, stream, float64(used)/1e6, float64(used)/float64(b64))
			if used > 36*uint64(b64)/10 && !raceEnabled {
				t.Errorf("%s stream=%v: a 5 MiB image out allocated %d bytes, more than 3.6x its base64 (%d)", w.name, stream, used, b64)
			}
		}
	}
}

// TestJSClientParts: the A2A project's JavaScript SDK, as a JSON-RPC and
// an HTTP+JSON client of 1.0 and of 0.3 (testdata/a2a/parts.mjs), sends
// a file part of bytes, one of a URI and a data part, sent and streamed:
// the agent (parts.py) gets them in its input's parts, and the SDK reads
// back the agent's parts as file and data parts: the bytes it sent, and
// the PNG the agent made.
func TestJSClientParts(t *testing.T) {
	modules := sdkModules(t)
	url := serveParts(t, "echo", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/a2a/parts.mjs", url)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parts.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("parts.mjs:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 8 {
		t.Fatalf("parts.mjs printed %d lines, want 8", len(lines))
	}
	for _, line := range lines {
		var got struct {
			Step, State, Error string
			Parts              []string
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("parts.mjs printed %q", line)
		}
		t.Run(got.Step, func(t *testing.T) {
			if got.Error != "" || got.State != "TASK_STATE_COMPLETED" {
				t.Fatalf("%s: %s", got.State, got.Error)
			}
			// The SDK's 0.3 HTTP+JSON client speaks the 0.3.0 proto,
			// whose FilePart has no name.
			a, report, dot := "a.png", "report.pdf", "dot.png"
			if strings.HasPrefix(got.Step, "HTTP+JSON 0.3") {
				a, report, dot = "-", "-", "-"
			}
			want := []string{
				`text "got 3 parts:\ninline image/png ` + a + ` 108\nfile application/pdf https://files.example/report.pdf\ndata {\"total\":12.5}"`,
				"raw image/png " + a + " 108 (the PNG sent)",
				"url application/pdf " + report + " https://files.example/report.pdf",
				`data {"total":12.5}`,
				"raw image/png " + dot + " 70 (a PNG)",
				`text "done"`,
			}
			if fmt.Sprint(got.Parts) != fmt.Sprint(want) {
				t.Errorf("the artifact's parts:\n got %q\nwant %q", got.Parts, want)
			}
		})
	}
}

// TestPartsSubscribed: a subscriber to a running task gets the agent's
// image as the stream's caller does, an artifact-update whose bytes are
// the agent's base64, in both versions.
func TestPartsSubscribed(t *testing.T) {
	release := make(chan struct{})
	image := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3000)...))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /later", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"text\":\"wait\"}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: {\"inline_data\":{\"mime_type\":\"image/png\",\"display_name\":\"late.png\",\"data\":%q}}\n\n", image)
	})
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	url, _, _ := serveMap(t, "later", "upstream: {url: AGENT}\nmethods:\n  later: {mode: stream, call: POST /later, reply: sse}\n", agent.URL)

	for _, w := range ways[:2] {
		t.Run(w.name, func(t *testing.T) {
			resp := sendParts(t, url, w, true, inPart{text: "go"})
			defer resp.Body.Close()
			streamed := bufio.NewReader(resp.Body)
			var id string
			for id == "" {
				line, err := streamed.ReadString('\n')
				if err != nil {
					t.Fatalf("the stream ended before its first part: %v", err)
				}
				if i := strings.Index(line, `"taskId":"`); i >= 0 && strings.Contains(line, "artifact") {
					id = line[i+len(`"taskId":"`):]
					id = id[:strings.IndexByte(id, '"')]
				}
			}
			method := map[version]string{v03: "tasks/resubscribe", v10: "SubscribeToTask"}[w.shape]
			sub := rpc(t, url, w.version, taskReq(method, id))
			subbed := bufio.NewReader(sub.Body)
			if line, err := subbed.ReadString('\n'); err != nil || !strings.Contains(line, "wait") {
				t.Fatalf("the subscription's first event = %q (%v), want the task as it is", line, err)
			}
			release <- struct{}{}
			a := readAnswer(t, &http.Response{StatusCode: 200, Header: sub.Header, Body: io.NopCloser(subbed)})
			sub.Body.Close()
			if last := a.parts[len(a.parts)-1]; last.Kind != "file" || last.Bytes != image || last.Name != "late.png" || last.MIME != "image/png" {
				t.Errorf("the subscriber's last part = %+v, want late.png with the agent's base64", last)
			}
		})
	}
}
