package mcp

import (
	"bytes"
	"encoding/base64"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClient: the official Go SDK's client (go-sdk v1.8.0) connects
// as it does by default, 2026-07-28 (server/discover first, then every
// request stateless), and as a 2025-11-25 and a 2025-06-18 client
// (initialize, its session); each lists the tools, calls a unary one, a
// streaming one with a progress token (a notification per text record,
// then the whole text), a failing one and an unknown one, against the
// sidecar in front of a python3 agent.
// goConnect connects client, the official Go SDK's, to the door at url
// over streamable HTTP at version ("": the newest it speaks); the session
// is closed when the test ends.
func goConnect(t *testing.T, client *gomcp.Client, url, version string) *gomcp.ClientSession {
	t.Helper()
	transport := &gomcp.StreamableClientTransport{Endpoint: url, HTTPClient: testClient, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := client.Connect(t.Context(), transport, &gomcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestGoSDKClient(t *testing.T) {
	s := serve(t, "", Options{})
	for _, version := range []string{"", version20251125, version20250618} {
		t.Run("version "+version, func(t *testing.T) {
			progressed := make(chan string, 100)
			client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, &gomcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *gomcp.ProgressNotificationClientRequest) {
					progressed <- fmt.Sprintf("%v %v %s", r.Params.ProgressToken, r.Params.Progress, r.Params.Message)
				}})
			ctx := t.Context()
			cs := goConnect(t, client, s.url, version)
			init := cs.InitializeResult()
			want := version
			if want == "" {
				want = version20260728
			}
			if init.ProtocolVersion != want || init.ServerInfo == nil || init.ServerInfo.Name != "sidecar" || init.Capabilities.Tools == nil {
				t.Errorf("connected with %+v, want %s, the sidecar's info and tools", init, want)
			}
			if (cs.ID() != "") != (version != "") {
				t.Errorf("session id %q: want one for a 2025 version only", cs.ID())
			}

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name+": "+tool.Description)
			}
			if got := strings.Join(names, ", "); got != "ask: Answers a question., story: Tells a story., long: , fail: , fail_late: " {
				t.Errorf("tools = %s", got)
			}
			schema, _ := json.Marshal(tools.Tools[0].InputSchema)
			if string(schema) != `{"properties":{"message":{"type":"string"}},"required":["message"],"type":"object"}` {
				t.Errorf("ask's input schema = %s", schema)
			}

			ask, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "what is up"}})
			if err != nil {
				t.Fatal(err)
			}
			structured, _ := json.Marshal(ask.StructuredContent)
			if text := ask.Content[0].(*gomcp.TextContent).Text; ask.IsError || text != `{"answer":"you asked: what is up","words":3}` ||
				string(structured) != `{"answer":"you asked: what is up","words":3}` {
				t.Errorf("ask = %q, structured %s, isError %v", text, structured, ask.IsError)
			}

			params := &gomcp.CallToolParams{Name: "story", Arguments: map[string]any{"message": "the end"}}
			params.SetProgressToken("story-1")
			story, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if text := story.Content[0].(*gomcp.TextContent).Text; story.IsError || text != "once upon a time the end " {
				t.Errorf("story = %q (isError %v)", text, story.IsError)
			}
			// The SDK hands notifications to the handler on goroutines of
			// its own, maybe after the result: wait for the six.
			var progress []string
			for len(progress) < 6 {
				select {
				case p := <-progressed:
					progress = append(progress, p)
				case <-time.After(hangGuard):
					t.Fatalf("progress after %v: %q, want 6 notifications", hangGuard, progress)
				}
			}
			slices.Sort(progress)
			if got := strings.Join(progress, "|"); got != "story-1 1 once |story-1 2 upon |story-1 3 a |story-1 4 time |story-1 5 the |story-1 6 end " {
				t.Errorf("progress = %q", got)
			}

			fail, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "fail", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if text := fail.Content[0].(*gomcp.TextContent).Text; !fail.IsError || text != "the model is overloaded" {
				t.Errorf("fail = %q (isError %v), want the agent's message, isError", text, fail.IsError)
			}

			_, err = cs.CallTool(ctx, &gomcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
			var rpcErr interface{ Error() string }
			if err == nil || !errors.As(err, &rpcErr) || !strings.Contains(err.Error(), `Unknown tool "nope"`) {
				t.Errorf("an unknown tool = %v, want the JSON-RPC error", err)
			}
		})
	}
}

// TestRemovedMethodBeforeMeta: a method 2026-07-28 removed (ping) is
// 404 -32601 even without the _meta that revision asks of every request,
// as the Go SDK v1.8.0 sends its ping (its bug): the method is answered
// first, so that client's Ping fails as "method not found", not -32602.
func TestRemovedMethodBeforeMeta(t *testing.T) {
	s := serve(t, "", Options{})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`,
	} {
		resp, b := post(t, s.url, body, "MCP-Protocol-Version", version20260728, "Mcp-Method", "ping")
		if r := decode(t, b); resp.StatusCode != 404 || r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s (2026-07-28) = %d %s, want 404 -32601", body, resp.StatusCode, b)
		}
	}

	client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, nil)
	cs := goConnect(t, client, s.url, "")
	err := cs.Ping(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "-32601") && !strings.Contains(err.Error(), "Method not found") {
		t.Errorf("the Go SDK's Ping at 2026-07-28 = %v, want method not found", err)
	}
}

// TestGoSDKParts: the official Go SDK's client, 2026-07-28 and a
// 2025-11-25 session, reads a streaming tool's image, audio, embedded
// resource and resource link from a python3 agent's part records, in
// order with its text, their bytes those the agent sent.
func TestGoSDKParts(t *testing.T) {
	s := serveMap(t, partsMap, startAgent(t), Options{})
	records, _ := partsRecords()
	png, _ := base64.StdEncoding.DecodeString(pngB64)
	wav, _ := base64.StdEncoding.DecodeString(wavB64)
	pdf, _ := base64.StdEncoding.DecodeString(pdfB64)
	for _, version := range []string{"", version20251125} {
		t.Run("version "+version, func(t *testing.T) {
			client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, nil)
			ctx := t.Context()
			cs := goConnect(t, client, s.url, version)
			res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "records", Arguments: map[string]any{"records": json.RawMessage(records)}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Content {
				switch c := c.(type) {
				case *gomcp.TextContent:
					got = append(got, "text "+c.Text)
				case *gomcp.ImageContent:
					got = append(got, fmt.Sprintf("image %s %t", c.MIMEType, bytes.Equal(c.Data, png)))
				case *gomcp.AudioContent:
					got = append(got, fmt.Sprintf("audio %s %t", c.MIMEType, bytes.Equal(c.Data, wav)))
				case *gomcp.EmbeddedResource:
					got = append(got, fmt.Sprintf("resource %s %s %t", c.Resource.URI, c.Resource.MIMEType, bytes.Equal(c.Resource.Blob, pdf)))
				case *gomcp.ResourceLink:
					got = append(got, fmt.Sprintf("link %s %s %s", c.URI, c.Name, c.MIMEType))
				default:
					got = append(got, fmt.Sprintf("%T", c))
				}
			}
			want := []string{"text Here is the chart:", "image image/png true", "audio audio/wav true", "text and the report",
				"resource part:3/report.pdf application/pdf true", "link https://example.com/slides.pdf slides.pdf application/pdf", `text {"total":12.5}`}
			if strings.Join(got, "\n") != strings.Join(want, "\n") || res.IsError {
				t.Errorf("content =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"total":12.5}` {
				t.Errorf("structuredContent = %s", sc)
			}
		})
	}
}
