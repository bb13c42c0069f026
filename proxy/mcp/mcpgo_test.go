package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoParts: mark3labs/mcp-go's client (v1.2.1) over streamable
// HTTP, as it negotiates by default (2026-07-28, server/discover) and
// pinned to 2025-11-25 and 2025-06-18 (initialize, its session), lists the
// tools and reads a streaming tool's image, audio, embedded resource and
// resource link from a python3 agent's part records, in order with its
// text, their bytes those the agent sent.
func TestMCPGoParts(t *testing.T) {
	s := serveMap(t, partsMap, startAgent(t), Options{})
	records, _ := partsRecords()
	png, _ := base64.StdEncoding.DecodeString(pngB64)
	wav, _ := base64.StdEncoding.DecodeString(wavB64)
	pdf, _ := base64.StdEncoding.DecodeString(pdfB64)
	decoded := func(b64 string, want []byte) bool {
		got, err := base64.StdEncoding.DecodeString(b64)
		return err == nil && bytes.Equal(got, want)
	}
	for _, version := range []string{"", version20251125, version20250618} {
		t.Run("version "+version, func(t *testing.T) {
			ctx := t.Context()
			trans, err := mcpgotransport.NewStreamableHTTP(s.url, mcpgotransport.WithHTTPBasicClient(testClient))
			if err != nil {
				t.Fatal(err)
			}
			var options []mcpgo.ClientOption
			if version != "" {
				options = append(options, mcpgo.WithProtocolVersion(version))
			}
			client := mcpgo.NewClient(trans, options...)
			defer client.Close()
			if err := client.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcpgotypes.InitializeRequest{}
			init.Params.ClientInfo = mcpgotypes.Implementation{Name: "sidecar-test", Version: "1.0.0"}
			res, err := client.Initialize(ctx, init)
			if err != nil {
				t.Fatal(err)
			}
			want := version
			if want == "" {
				want = "2026-07-28"
			}
			if res.ProtocolVersion != want {
				t.Errorf("protocol version %q, want %q", res.ProtocolVersion, want)
			}
			tools, err := client.ListTools(ctx, mcpgotypes.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if got := strings.Join(names, " "); got != "records record whole big tiny" {
				t.Errorf("tools = %s", got)
			}
			call := mcpgotypes.CallToolRequest{}
			call.Params.Name = "records"
			call.Params.Arguments = map[string]any{"records": json.RawMessage(records)}
			result, err := client.CallTool(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range result.Content {
				switch c := c.(type) {
				case mcpgotypes.TextContent:
					got = append(got, "text "+c.Text)
				case mcpgotypes.ImageContent:
					got = append(got, fmt.Sprintf("image %s %t", c.MIMEType, decoded(c.Data, png)))
				case mcpgotypes.AudioContent:
					got = append(got, fmt.Sprintf("audio %s %t", c.MIMEType, decoded(c.Data, wav)))
				case mcpgotypes.EmbeddedResource:
					blob, ok := c.Resource.(mcpgotypes.BlobResourceContents)
					got = append(got, fmt.Sprintf("resource %s %s %t", blob.URI, blob.MIMEType, ok && decoded(blob.Blob, pdf)))
				case mcpgotypes.ResourceLink:
					got = append(got, fmt.Sprintf("link %s %s %s", c.URI, c.Name, c.MIMEType))
				default:
					got = append(got, fmt.Sprintf("%T", c))
				}
			}
			wantContent := []string{"text Here is the chart:", "image image/png true", "audio audio/wav true", "text and the report",
				"resource part:3/report.pdf application/pdf true", "link https://example.com/slides.pdf slides.pdf application/pdf", `text {"total":12.5}`}
			if strings.Join(got, "\n") != strings.Join(wantContent, "\n") || result.IsError {
				t.Errorf("content =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantContent, "\n"))
			}
			if sc, _ := json.Marshal(result.StructuredContent); string(sc) != `{"total":12.5}` {
				t.Errorf("structuredContent = %s", sc)
			}
		})
	}
}
