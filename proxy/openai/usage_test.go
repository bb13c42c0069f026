package openai

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStreamUsage: a chat completions stream asked with
// stream_options.include_usage ends with the usage chunk the API defines,
// after the finish_reason chunk and before [DONE]: choices empty, usage
// the agent's when its stream's end carries one (an OpenAI chat stream's
// last chunk), zeros when it does not. Without include_usage no such chunk
// comes.
func TestStreamUsage(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	for _, tt := range []struct {
		method string
		want   string
	}{
		{"replay_chat", `{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}`},
		{"chat", `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`},
	} {
		t.Run(tt.method, func(t *testing.T) {
			base := s.serve(t, Options{Method: tt.method, Model: "m"})
			body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
			_, got := post(t, base+RouteChat, body)
			_, data := events(t, got)
			if len(data) < 3 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("stream %q: want a usage chunk, then [DONE]", data)
			}
			var c struct {
				ID, Object string
				Choices    []json.RawMessage
				Usage      json.RawMessage
			}
			last := data[len(data)-2]
			if json.Unmarshal([]byte(last), &c) != nil || c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") ||
				c.Choices == nil || len(c.Choices) != 0 || string(c.Usage) != tt.want {
				t.Errorf("the chunk before [DONE] = %s, want choices [] and usage %s", last, tt.want)
			}
			if !strings.Contains(data[len(data)-3], `"finish_reason":"stop"`) {
				t.Errorf("the chunk before the usage = %s, want finish_reason stop", data[len(data)-3])
			}

			_, got = post(t, base+RouteChat, chatBody("m", "hi", true))
			if strings.Contains(got, `"usage"`) {
				t.Errorf("without include_usage: %s has a usage chunk", got)
			}
		})
	}
}
