package livedoor

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/proxy/live"
)

// FuzzSetup: whatever text a caller opens with, reading it as a setup
// never panics; it is a setup, whose input (when any) is one JSON value,
// or a FrameError the caller can be closed with.
func FuzzSetup(f *testing.F) {
	for _, s := range []string{
		`{"setup":{"name":"projects/P/locations/L/reasoningEngines/ID","class_method":"bidi_stream_query","input":{"query":"hello"}}}`,
		`{"setup": {"classMethod": "talk", "input": null}}`, `{"setup":{}}`, `{"setup":1}`, `{"setup":{"class_method":2}}`,
		`{"bidi_stream_input":{}}`, `{"setup":{},"x":1}`, `hello`, ``, `{`, `{"setup":{"input":[1,{"a":"\u00e9"}]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := parseSetup(websocket.MessageText, []byte(text))
		var fe *live.FrameError
		switch {
		case err != nil && !errors.As(err, &fe):
			t.Fatalf("parseSetup(%q) = %v, not a FrameError", text, err)
		case err != nil && fe.Code != websocket.StatusInvalidFramePayloadData:
			t.Fatalf("parseSetup(%q) closes with %d, want 1007 for text", text, fe.Code)
		case err == nil && s.input != nil && !json.Valid(s.input):
			t.Fatalf("parseSetup(%q) input %q is not JSON", text, s.input)
		}
	})
}
