package adk

import (
	"encoding/json"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/ask"
)

// TestResponseOf: the function response a reply becomes: a confirmation
// is confirmed only when accepted and said so, with its payload; a
// long-running tool's is the content, or the action when not accepted.
func TestResponseOf(t *testing.T) {
	tests := []struct {
		name  string
		reply ask.Reply
		want  string
	}{
		{"adk_request_confirmation", ask.Reply{Action: ask.Accept, Content: json.RawMessage(`{"confirmed":true,"payload":{"limit":5}}`)}, `{"confirmed":true,"payload":{"limit":5}}`},
		{"adk_request_confirmation", ask.Reply{Action: ask.Accept, Content: json.RawMessage(`{"confirmed":false}`)}, `{"confirmed":false}`},
		{"adk_request_confirmation", ask.Reply{Action: ask.Decline, Content: json.RawMessage(`{"confirmed":true}`)}, `{"confirmed":false}`},
		{"adk_request_confirmation", ask.Reply{Action: ask.Cancel}, `{"confirmed":false}`},
		{"open_ticket", ask.Reply{Action: ask.Accept, Content: json.RawMessage(`{"status":"done"}`)}, `{"status":"done"}`},
		{"open_ticket", ask.Reply{Action: ask.Accept}, `{}`},
		{"open_ticket", ask.Reply{Action: ask.Decline}, `{"action":"decline"}`},
	}
	for _, tt := range tests {
		got, err := responseOf(tt.name, &tt.reply)
		if err != nil || string(got) != tt.want {
			t.Errorf("responseOf(%s, %+v) = %s, %v; want %s", tt.name, tt.reply, got, err, tt.want)
		}
	}
}

// TestPausedCall: the call a reply names is found in a session's events
// in either key case; an id no call has is not.
func TestPausedCall(t *testing.T) {
	session := json.RawMessage(`{"id":"s1","events":[{"content":{"parts":[{"text":"hi"}]}},` +
		`{"content":{"parts":[{"functionCall":{"id":"c1","name":"adk_request_confirmation","args":{"x":1}}}]}},` +
		`{"content":{"parts":[{"function_call":{"id":"c2","name":"open_ticket","args":{}}}]}}]}`)
	for _, tt := range []struct{ id, name string }{{"c1", "adk_request_confirmation"}, {"c2", "open_ticket"}, {"c3", ""}} {
		name, _, ok := pausedCall(session, tt.id)
		if name != tt.name || ok != (tt.name != "") {
			t.Errorf("pausedCall(%s) = %q, %v; want %q", tt.id, name, ok, tt.name)
		}
	}
}
