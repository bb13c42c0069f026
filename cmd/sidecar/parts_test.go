package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// partsAgent is an agent in Python's standard library that answers with
// parts that are not text: POST /chart streams (SSE) a text, a real PNG,
// a file by URI, data, and then each part of its input's parts as it
// came; POST /big answers one part of 5.5 MiB.
const partsAgent = `
import base64, json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        if self.path == "/big":
            recs = [{"inline_data": {"mime_type": "application/octet-stream", "data": base64.b64encode(bytes(11 << 19)).decode()}}]
        else:
            recs = [{"text": "Here is the chart:"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                    {"file_data": {"mime_type": "application/pdf", "file_uri": "https://example.com/r.pdf"}},
                    {"data": {"total": 12.5}}]
            recs += body.get("parts", [])
        for r in recs:
            self.wfile.write(b"data: " + json.dumps(r, separators=(",", ":")).encode() + b"\n\n")
            self.wfile.flush()

s = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H)
print("READY", flush=True)
s.serve_forever()
`

// TestContractParts: through the contract, an agent's parts reach the
// caller as the records it sent (emit raw) or in their one shape (emit
// text, camelCase read as snake_case), in order with the text; a unary
// emit text output keeps them beside the text; a caller's parts reach the
// agent as sent; a part over limits.parts.bytes ends an emit text stream
// with PART_TOO_LARGE, and passes as it is with emit raw (whose records
// are the agent's, bounded by limits.record_bytes).
func TestContractParts(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent.py")
	if err := os.WriteFile(script, []byte(partsAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startServerOnPort(t, nil, "python3", script)
	base := startSidecar(t, "upstream: {url: "+a.url+"}\nmethods:\n"+
		"  raw: {mode: stream, call: POST /chart}\n"+
		"  text: {mode: stream, call: POST /chart, emit: text}\n"+
		"  whole: {call: POST /chart, emit: text}\n"+
		"  big: {mode: stream, call: POST /big, emit: text}\n"+
		"  bigraw: {mode: stream, call: POST /big}\n")

	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	photo := `{"inline_data":{"mime_type":"image/png","data":"` + png + `","display_name":"receipt.png"}}`
	input := `{"message":"total?","parts":[` + photo + `]}`

	status, body := postJSON(t, base+"/api/stream_reasoning_engine", `{"class_method":"raw","input":`+input+`}`)
	want := []string{`{"text":"Here is the chart:"}`, `{"inlineData":{"mimeType":"image/png","data":"` + png + `"}}`,
		`{"file_data":{"mime_type":"application/pdf","file_uri":"https://example.com/r.pdf"}}`, `{"data":{"total":12.5}}`,
		`{"inline_data":{"mime_type":"image/png","data":"` + png + `","display_name":"receipt.png"}}`}
	if got := strings.Split(strings.TrimSpace(body), "\n"); status != 200 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("emit raw: %d\n%s\nwant\n%s", status, body, strings.Join(want, "\n"))
	}

	status, body = postJSON(t, base+"/api/stream_reasoning_engine", `{"class_method":"text","input":`+input+`}`)
	// Records of no framework's dialect pass the stage as they are, but
	// for the parts, written in their one shape (and no end record).
	want[1] = `{"inline_data":{"mime_type":"image/png","data":"` + png + `"}}`
	want[4] = `{"inline_data":{"mime_type":"image/png","display_name":"receipt.png","data":"` + png + `"}}`
	if got := strings.Split(strings.TrimSpace(body), "\n"); status != 200 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("emit text: %d\n%s\nwant\n%s", status, body, strings.Join(want, "\n"))
	}

	// Records of no framework's dialect pass through the stage: a unary
	// call's output is their array, the parts in their one shape.
	status, body = postJSON(t, base+"/api/reasoning_engine", `{"class_method":"whole","input":{"message":"total?"}}`)
	var whole struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(body), &whole); status != 200 || err != nil || len(whole.Output) != 4 || string(whole.Output[1]) != want[1] {
		t.Errorf("unary emit text: %d %s", status, body)
	}

	status, body = postJSON(t, base+"/api/stream_reasoning_engine", `{"class_method":"big","input":{}}`)
	if status != 200 || !strings.Contains(body, "PART_TOO_LARGE") || !strings.Contains(body, "limits.parts.bytes") || strings.Contains(body, "inline_data") {
		t.Errorf("a 5.5 MiB part, emit text: %d %.300s", status, body)
	}
	status, body = postJSON(t, base+"/api/stream_reasoning_engine", `{"class_method":"bigraw","input":{}}`)
	if status != 200 || !strings.HasPrefix(body, `{"inline_data":`) || len(body) < 7<<20 {
		t.Errorf("a 5.5 MiB part, emit raw: %d, %d bytes %.100s", status, len(body), body)
	}
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	r := post(t, url, body)
	return r.status, r.body
}
