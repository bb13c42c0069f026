package producers

import (
	"bytes"
	"encoding/json"
	"flag"
	"mime"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the captures in testdata/dialects/captures")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestProducersCapture starts each producer, requests each variant, checks
// the stream's shape (status, Content-Type, the dialect's headers, the
// frame kinds, the last frame) and, with -update, saves the reply as the
// variant's capture. Without -update it also checks that the saved
// capture has the same shape, so a capture never drifts from its checks.
func TestProducersCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the node producers")
	}
	bases := map[string]string{}
	for _, v := range Variants {
		if script := Script[v.Dialect]; bases[script] == "" {
			bases[script] = Start(t, script)
		}
	}
	for _, v := range Variants {
		t.Run(v.Dialect+"/"+v.Name, func(t *testing.T) {
			resp, body := Do(t, bases[Script[v.Dialect]], v)
			checkShape(t, "reply", v, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get, body)
			path := CapturePath(v)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, Capture(resp, body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			saved, err := ReadCapture(path)
			if err != nil {
				t.Fatalf("capture %s: %v (run with -update to write it)", path, err)
			}
			defer saved.Body.Close()
			var b bytes.Buffer
			if _, err := b.ReadFrom(saved.Body); err != nil {
				t.Fatal(err)
			}
			checkShape(t, "capture", v, saved.StatusCode, saved.Header.Get("Content-Type"), saved.Header.Get, b.Bytes())
		})
	}
}

func checkShape(t *testing.T, what string, v Variant, status int, contentType string, header func(string) string, body []byte) {
	t.Helper()
	if status != 200 {
		t.Fatalf("%s: status %d, want 200: %s", what, status, body)
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt != v.ContentType {
		t.Errorf("%s: Content-Type %q, want %s", what, contentType, v.ContentType)
	}
	for k, want := range v.WantHeader {
		if got := header(k); got != want {
			t.Errorf("%s: %s: %q, want %q", what, k, got, want)
		}
	}
	got := kinds(t, v.Dialect, frames(body))
	for _, want := range v.Want {
		if !slices.Contains(got, want) {
			t.Errorf("%s: no %q frame in %q", what, want, got)
		}
	}
	if len(got) == 0 || got[len(got)-1] != v.Last {
		t.Errorf("%s: frames %q, want the last one %q", what, got, v.Last)
	}
}

type frame struct{ event, data string }

// frames splits an SSE body (LF or CRLF) into its events.
func frames(body []byte) []frame {
	var out []frame
	var f frame
	var data []string
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	for _, line := range strings.Split(text, "\n") {
		switch {
		case line == "":
			if data != nil || f.event != "" {
				f.data = strings.Join(data, "\n")
				out = append(out, f)
			}
			f, data = frame{}, nil
		case strings.HasPrefix(line, "event:"):
			f.event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out
}

// kinds names each frame the way the variants' Want and Last do.
func kinds(t *testing.T, dialect string, fs []frame) []string {
	t.Helper()
	var out []string
	for _, f := range fs {
		if f.data == "[DONE]" {
			out = append(out, "[DONE]")
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.data), &m); err != nil && dialect != "langgraph" {
			t.Fatalf("frame %q: %v", f.data, err)
		}
		str := func(raw json.RawMessage) string {
			var s string
			json.Unmarshal(raw, &s)
			return s
		}
		switch dialect {
		case "vercel-ui", "ag-ui":
			out = append(out, str(m["type"]))
		case "langgraph":
			out = append(out, f.event)
		case "openai-responses":
			if f.event != str(m["type"]) {
				t.Errorf("event %q carries type %q", f.event, str(m["type"]))
			}
			out = append(out, f.event)
		case "openai-chat":
			out = append(out, chatKind(m))
		case "a2a":
			out = append(out, a2aKind(m))
		case "openai-agents":
			out = append(out, agentsKind(f.event, m))
		}
	}
	return out
}

func chatKind(m map[string]json.RawMessage) string {
	if m["error"] != nil {
		return "error"
	}
	var c struct {
		Choices []struct {
			Delta struct {
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	raw, _ := json.Marshal(m)
	json.Unmarshal(raw, &c)
	switch {
	case len(c.Choices) == 0:
		return "usage"
	case c.Choices[0].FinishReason != nil:
		return "finish:" + *c.Choices[0].FinishReason
	case c.Choices[0].Delta.ToolCalls != nil:
		return "tool_calls"
	}
	return "delta"
}

// a2aKind: v0.3 results by `kind` (status updates with their state and
// ":final" when final), v1.0 results by their StreamResponse key (status
// updates with their state); a JSON-RPC error is "error".
func a2aKind(m map[string]json.RawMessage) string {
	if m["error"] != nil {
		return "error"
	}
	var r map[string]json.RawMessage
	json.Unmarshal(m["result"], &r)
	type status struct {
		Status struct{ State string } `json:"status"`
		Final  bool                   `json:"final"`
	}
	if k, ok := r["kind"]; ok {
		var kind string
		json.Unmarshal(k, &kind)
		if kind != "status-update" {
			return kind
		}
		var s status
		raw, _ := json.Marshal(r)
		json.Unmarshal(raw, &s)
		kind += ":" + s.Status.State
		if s.Final {
			kind += ":final"
		}
		return kind
	}
	for _, key := range []string{"task", "message", "artifactUpdate"} {
		if r[key] != nil {
			return key
		}
	}
	if r["statusUpdate"] != nil {
		var s status
		json.Unmarshal(r["statusUpdate"], &s)
		return "statusUpdate:" + s.Status.State
	}
	return "?"
}

// agentsKind: an OpenAI Agents SDK RunStreamEvent by its model event's
// type (raw_model_stream_event) or its item's name
// (run_item_stream_event); the server's own `event: error` is "error".
func agentsKind(event string, m map[string]json.RawMessage) string {
	if event == "error" {
		return "error"
	}
	var e struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Data struct {
			Type string `json:"type"`
		} `json:"data"`
	}
	raw, _ := json.Marshal(m)
	json.Unmarshal(raw, &e)
	switch e.Type {
	case "raw_model_stream_event":
		return e.Data.Type
	case "run_item_stream_event":
		return e.Name
	}
	return e.Type
}

// TestOpenAIFixturesParse proves the OpenAI fixture server's streams with
// the official openai package: openai-check.mjs reads every variant with
// its stream reader and accumulators.
func TestOpenAIFixturesParse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the node fixture server")
	}
	base := Start(t, "openai.mjs")
	cmd := exec.Command("node", "openai-check.mjs", base)
	cmd.Dir = Dir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openai-check.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
