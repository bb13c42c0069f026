package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// chatBody is a chat completions request of model for the user's text.
func chatBody(model, text string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream,
		"messages": []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": text}}})
	return string(b)
}

// TestSmoke: a chat completion, unary and streamed.
func TestSmoke(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	base := s.serve(t, Options{Method: "chat", Model: "m"})
	resp, body := post(t, base+RouteChat, chatBody("m", "hi", false))
	t.Logf("%d %s", resp.StatusCode, body)
	resp, body = post(t, base+RouteChat, chatBody("m", "hi", true))
	t.Logf("%d %s", resp.StatusCode, body)
	resp, body = post(t, base+RouteResponses, `{"model":"m","input":"hi","stream":true}`)
	t.Logf("%d %s", resp.StatusCode, body)
	resp, body = post(t, base+RouteResponses, `{"model":"m","input":"hi"}`)
	t.Logf("%d %s", resp.StatusCode, body)
	resp, body = do(t, http.MethodGet, base+RouteModels, "")
	t.Logf("%d %s", resp.StatusCode, body)
	_ = strings.Contains
}
