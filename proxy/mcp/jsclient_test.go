package mcp

import (
	"encoding/base64"
	"encoding/hex"

	"testing"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// The lines every client prints the same, whatever its revision.
const (
	wantTools = `{"step":"tools","tools":[["ask","Answers a question.","object",["message"]],["story","Tells a story.","object",[]],` +
		`["long","","object",[]],["fail","","object",[]],["fail_late","","object",[]]]}`
	wantAsk   = `{"step":"ask","text":"{\"answer\":\"you asked: what is up\",\"words\":3}","structured":{"answer":"you asked: what is up","words":3},"isError":false}`
	wantStory = `{"step":"story","text":"once upon a time the end ","progress":[[1,"once "],[2,"upon "],[3,"a "],[4,"time "],[5,"the "],[6,"end "]],"isError":false}`
	wantFail  = `{"step":"fail","isError":true,"text":"`
)

// TestSDK1Client: the MCP TypeScript SDK 1.x client (Client and
// StreamableHTTPClientTransport) initializes a 2025-11-25 session, lists
// the tools, calls a unary tool (text and structuredContent), a streaming
// one with onprogress (a progress per text record of the agent's OpenAI
// stream, then the whole text), tools that fail (isError with the agent's
// message, before and after the first byte), an unknown tool (a JSON-RPC
// error), and ends its session, against the sidecar in front of a python3
// agent.
func TestSDK1Client(t *testing.T) {
	s := serve(t, "", Options{})
	got := deps.Node(t, "mcp", "client.mjs", s.url)
	deps.MatchLines(t, got, []string{
		`{"step":"connect","version":"2025-11-25","session":true,"server":"sidecar","tools":true}`,
		wantTools, wantAsk, wantStory,
		wantFail + `the model is overloaded"}`,
		`{"step":"fail_late","isError":true,"text":"the model is overloaded"}`,
		`{"step":"unknown tool","code":-32602,"message":"MCP error -32602: Unknown tool \"nope\"`,
		`{"step":"terminate","session":null}`,
	})
	if n := s.door.sessions.len(); n != 0 {
		t.Errorf("%d sessions after the client ended its own, want 0", n)
	}
}

// TestSDK2Client: the MCP TypeScript client 2.x, in each of its modes:
// "auto" and "pin" speak 2026-07-28 (server/discover, then every request
// stateless), its default initializes a 2025-11-25 session; each lists
// the tools and calls them as the 1.x client does.
func TestSDK2Client(t *testing.T) {
	s := serve(t, "", Options{})
	for _, tt := range []struct{ mode, version string }{
		{"auto", "2026-07-28"}, {"pin", "2026-07-28"}, {"legacy", "2025-11-25"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			got := deps.Node(t, "mcp2", "client.mjs", s.url, tt.mode)
			deps.MatchLines(t, got, []string{
				`{"step":"connect","version":"` + tt.version + `","server":"sidecar","tools":true}`,
				wantTools, wantAsk, wantStory,
				wantFail + `the model is overloaded"}`,
				`{"step":"unknown tool","code":-32602,"message":"Unknown tool \"nope\"`,
			})
		})
	}
}

// partsRecords are the agent's records the parts clients' tool answers:
// text, a PNG, a WAV, a PDF, a file by URI and data; wantParts the lines
// the clients print of its result, each content's bytes as the client
// decoded them.
func partsRecords() (string, []string) {
	png, _ := base64.StdEncoding.DecodeString(pngB64)
	wav, _ := base64.StdEncoding.DecodeString(wavB64)
	pdf, _ := base64.StdEncoding.DecodeString(pdfB64)
	records := `["Here is ",{"text":"the chart:"},{"inline_data":{"mime_type":"image/png","data":"` + pngB64 + `"}},` +
		`{"inline_data":{"mime_type":"audio/wav","data":"` + wavB64 + `"}},"and the report",` +
		`{"inline_data":{"mime_type":"application/pdf","display_name":"report.pdf","data":"` + pdfB64 + `"}},` +
		`{"file_data":{"file_uri":"https://example.com/slides.pdf","mime_type":"application/pdf"}},{"data":{"total":12.5}}]`
	return records, []string{
		`{"step":"progress","progress":["Here is ","the chart:","and the report"],"isError":false}`,
		`{"type":"text","text":"Here is the chart:"}`,
		`{"type":"image","mimeType":"image/png","bytes":"` + hex.EncodeToString(png) + `"}`,
		`{"type":"audio","mimeType":"audio/wav","bytes":"` + hex.EncodeToString(wav) + `"}`,
		`{"type":"text","text":"and the report"}`,
		`{"type":"resource","uri":"part:3/report.pdf","mimeType":"application/pdf","bytes":"` + hex.EncodeToString(pdf) + `"}`,
		`{"type":"resource_link","uri":"https://example.com/slides.pdf","name":"slides.pdf","mimeType":"application/pdf"}`,
		`{"type":"text","text":"{\"total\":12.5}"}`,
		`{"structured":{"total":12.5}}`,
	}
}

// TestSDK1Parts: the MCP TypeScript SDK 1.x client reads a streaming
// tool's image, audio, embedded resource, resource link and data from a
// python3 agent's part records, in order with its text, the bytes it
// decodes those the agent sent; progress carries the text alone.
func TestSDK1Parts(t *testing.T) {
	s := serveMap(t, partsMap, startAgent(t), Options{})
	records, want := partsRecords()
	deps.MatchLines(t, deps.Node(t, "mcp", "parts.mjs", s.url, records), want)
}

// TestSDK2Parts: the MCP TypeScript client 2.x reads them too, in each of
// its modes.
func TestSDK2Parts(t *testing.T) {
	s := serveMap(t, partsMap, startAgent(t), Options{})
	records, want := partsRecords()
	for _, mode := range []string{"auto", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			deps.MatchLines(t, deps.Node(t, "mcp2", "parts.mjs", s.url, mode, records), want)
		})
	}
}
