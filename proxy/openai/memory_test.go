package openai

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestMemoryPerAnswer: the real sidecar process, in front of an agent
// streaming a 30 MB answer in 30,000 records, answers each path of the
// door with the answer byte for byte, and its peak resident memory for
// that one call (a fresh process each) is at most twice the answer plus
// 30 MB: a door that repeats the answer (the Responses stream's closing
// events) keeps one copy and writes from it. Three streamed responses at
// once stay within three times that. A whole answer (no stream) is the
// mapping stage's one JSON value (core.Agent.Unary), kept in blocks as
// the records come and copied once into a value of its size, which the
// door writes in place (one growing slice peaked at 100 to 135 MB, and
// before the door wrote from it 225 to 277 MB).
func TestMemoryPerAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 30 MB answer through the sidecar binary")
	}
	bin := doortest.BuildSidecar(t)
	agent := doortest.StartBigReply(t)
	want := doortest.BigReply(doortest.BigAnswer, doortest.BigPiece)
	yaml := fmt.Sprintf(`upstream: {url: %q}
protocols:
  openai: {listen: "127.0.0.1:0", method: answer, model: big}
methods:
  answer: {mode: stream, call: POST /answer/%d/%d}
`, agent, doortest.BigAnswer, doortest.BigPiece)
	tests := []struct {
		name   string
		route  string
		stream bool
		calls  int
	}{
		{"responses stream", RouteResponses, true, 1},
		{"responses", RouteResponses, false, 1},
		{"chat", RouteChat, false, 1},
		{"chat stream", RouteChat, true, 1},
		{"responses stream x3", RouteResponses, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := doortest.StartSidecar(t, bin, yaml, Name)
			url := "http://" + p.Addr[Name] + tt.route
			p.CheckPeakPerAnswer(t, tt.calls, want, func() (string, error) { return bigCall(url, tt.route, tt.stream) })
		})
	}
}

// bigCall calls the door at url and returns the answer's text: the
// deltas of a stream (a Responses stream's closing events must carry the
// same text), or the one message of a whole answer.
func bigCall(url, route string, stream bool) (string, error) {
	body := fmt.Sprintf(`{"model":"big","stream":%t,"messages":[{"role":"user","content":"go"}],"input":"go"}`, stream)
	client := &http.Client{Timeout: 5 * time.Minute}
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return "", fmt.Errorf("POST %s: %s %s", url, resp.Status, b)
	}
	if !stream {
		var answer struct {
			Choices []struct{ Message struct{ Content string } }
			Output  []struct {
				Content []struct{ Text string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			return "", fmt.Errorf("decoding the answer: %w", err)
		}
		if route == RouteChat && len(answer.Choices) == 1 {
			return answer.Choices[0].Message.Content, nil
		}
		if route == RouteResponses && len(answer.Output) == 1 && len(answer.Output[0].Content) == 1 {
			return answer.Output[0].Content[0].Text, nil
		}
		return "", fmt.Errorf("the answer has no one message")
	}
	var text strings.Builder
	closing := map[string]string{}
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			return "", fmt.Errorf("reading the stream: %w", err)
		}
		data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var e struct {
			Type    string
			Delta   string
			Text    string
			Part    struct{ Text string }
			Item    struct{ Content []struct{ Text string } }
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return "", fmt.Errorf("decoding an event: %w", err)
		}
		switch {
		case route == RouteChat && len(e.Choices) == 1:
			text.WriteString(e.Choices[0].Delta.Content)
		case e.Type == "response.output_text.delta":
			text.WriteString(e.Delta)
		case e.Type == "response.output_text.done":
			closing[e.Type] = e.Text
		case e.Type == "response.content_part.done":
			closing[e.Type] = e.Part.Text
		case e.Type == "response.output_item.done" && len(e.Item.Content) == 1:
			closing[e.Type] = e.Item.Content[0].Text
		case e.Type == "response.failed":
			return "", fmt.Errorf("the stream failed: %s", data)
		}
	}
	if route == RouteResponses {
		for _, typ := range []string{"response.output_text.done", "response.content_part.done", "response.output_item.done"} {
			if closing[typ] != text.String() {
				return "", fmt.Errorf("%s carries %d bytes, the deltas %d", typ, len(closing[typ]), text.Len())
			}
		}
	}
	return text.String(), nil
}

// TestPartMemory: the real sidecar process (a fresh one for each case)
// carries a 4 MiB image, 5.6 MB of base64, within a small multiple of it:
// the agent's image through a streamed and a whole Responses answer and a
// whole chat answer, and a caller's image in a chat request to the agent
// (which answers text). Its peak resident memory is at most 10 times the
// base64 plus 30 MB (measured 53 to 59 MB for the agent's image, 66 MB
// for a caller's, whose request the door reads into the input's parts
// and messages both; 22 MB for a text call).
func TestPartMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 MiB images through the sidecar binary")
	}
	const size = 4 << 20
	b64 := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, size-8)...))
	bin := doortest.BuildSidecar(t)
	agent := startAgent(t)
	yaml := fmt.Sprintf(`upstream: {url: %q}
protocols:
  openai: {listen: "127.0.0.1:0", method: image, model: m}
methods:
  image: {mode: stream, call: POST /big_part/%d}
  text: {mode: stream, call: POST /chat}
`, agent, size)
	caller := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`
	tests := []struct {
		name, method, route, body string
		want                      string // in the answer
	}{
		{"responses stream, the agent's image", "image", RouteResponses, `{"model":"m","input":"hi","stream":true}`, `"result":"` + b64 + `"`},
		{"responses, the agent's image", "image", RouteResponses, `{"model":"m","input":"hi"}`, `"result":"` + b64 + `"`},
		{"chat, the agent's image", "image", RouteChat, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `(data:image/png;base64,` + b64 + `)`},
		{"chat, a caller's image", "text", RouteChat, caller, `echo: look`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := doortest.StartSidecar(t, bin, strings.Replace(yaml, "method: image", "method: "+tt.method, 1), Name)
			resp, err := http.Post("http://"+p.Addr[Name]+tt.route, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			answer, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !strings.Contains(string(answer), tt.want) {
				t.Fatalf("%d, %d bytes (%v), want the image", resp.StatusCode, len(answer), err)
			}
			peak, limit := p.PeakRSS(t), int64(10*len(b64))+30<<20
			t.Logf("peak RSS %d MB for a %d MB image (limit %d MB)", peak>>20, len(b64)>>20, limit>>20)
			if peak > limit {
				t.Errorf("the sidecar's peak RSS is %d MB, want at most %d MB (10 × the base64 + 30 MB)", peak>>20, limit>>20)
			}
		})
	}
}
