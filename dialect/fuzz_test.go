package dialect

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

var fuzzDialects = []config.Dialect{config.DialectAuto, config.DialectOpenAIChat, config.DialectOpenAIResponses,
	config.DialectVercelUI, config.DialectAGUI, config.DialectA2A, config.DialectLangGraph, config.DialectADK, config.DialectOpenAIAgents}

// FuzzStage maps any SSE reply in every dialect with emit text and adk:
// no panic, every line one compact JSON value, and the text deltas out in
// order and complete (the text lines joined are the whole text, and the
// ADK partial events joined are its complete events' text).
func FuzzStage(f *testing.F) {
	for _, file := range fixtures(f) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), b)
	}
	for _, c := range captures(f) { // the real producers' streams
		f.Add(uint8(slices.Index(fuzzDialects, c.dialect)), c.body)
	}
	f.Add(uint8(3), []byte("data: {\"type\":\"text-delta\",\"delta\":\"a\\nb\"}\n\ndata: {\"type\":\"tool-input-available\",\"input\":7}\n\n"))
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		d := fuzzDialects[int(which)%len(fuzzDialects)]
		for _, e := range []config.Emit{config.EmitText, config.EmitADK} {
			lines, noted := mapNoted(t, d, e, bytes.NewReader(src), nil)
			var partial, complete, text strings.Builder
			for _, l := range lines {
				if strings.HasPrefix(l, "error: ") {
					continue
				}
				var buf bytes.Buffer
				if err := json.Compact(&buf, []byte(l)); err != nil || buf.String() != l || strings.ContainsAny(l, "\n\r") {
					t.Fatalf("dialect %s emit %s: line %q is not one compact JSON value", d, e, l)
				}
				var ev struct {
					Text    *string `json:"text"`
					Partial bool    `json:"partial"`
					Content struct {
						Parts []struct {
							Text    *string `json:"text"`
							Thought bool    `json:"thought"`
						} `json:"parts"`
					} `json:"content"`
				}
				json.Unmarshal([]byte(l), &ev)
				if ev.Text != nil {
					text.WriteString(*ev.Text)
				}
				for _, p := range ev.Content.Parts {
					if p.Text == nil || p.Thought {
						continue
					}
					if ev.Partial {
						partial.WriteString(*p.Text)
					} else {
						complete.WriteString(*p.Text)
					}
				}
			}
			failed := len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "error: ")
			if noted == string(config.DialectRaw) {
				continue // passed through as the agent wrote it
			}
			if e == config.EmitADK && !failed && partial.String() != complete.String() {
				t.Fatalf("dialect %s: partial text %q, complete text %q", d, partial.String(), complete.String())
			}
			if e == config.EmitText && !failed && text.Len() > 0 {
				// The unary whole is the same text, in the same order.
				c := Agent{}.mapped(testCall(d, e), newFixtureRecords(bytes.NewReader(src), nil), true)
				out, err := c.Collect()
				var whole struct{ Text string }
				if err == nil && json.Unmarshal(out, &whole) == nil && whole.Text != text.String() {
					t.Fatalf("dialect %s: text lines %q, whole %q", d, text.String(), whole.Text)
				}
			}
		}
	})
}
