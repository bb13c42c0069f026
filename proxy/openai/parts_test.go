package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// The bytes of the parts the tests send: a 1x1 PNG (the agent's PNG),
// the head of a WAV file, of an MP3 with its ID3 tag, and of a PDF.
var (
	pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	wavB64 = base64.StdEncoding.EncodeToString(append([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"), make([]byte, 64)...))
	mp3B64 = base64.StdEncoding.EncodeToString(append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), make([]byte, 64)...))
	pdfB64 = base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"))
)

// userContent is a chat completions request for the method's model "m"
// whose last user message's content is parts (JSON), after an earlier
// user message with an image of its own.
func userContent(parts string) string {
	return `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"before"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pngB64 + `"}}]},` +
		`{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"look"},` + parts + `]}]}`
}

// userInput is a responses request whose last user item's content is
// parts (JSON).
func userInput(parts string) string {
	return `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"look"},` + parts + `]}]}`
}

// TestPartsIn: the content parts of the last user message reach the
// agent in its input's parts, one part record each in the one shape
// (docs/parts.md), the caller's base64 as it sent it: chat's image_url (a
// data URL inline, an https URL a file, never fetched), input_audio (wav,
// mp3) and file (a data URL; bare base64 typed by its file name);
// Responses' input_image, input_file (file_data, file_url) and
// input_audio. The message is the text parts' text; chat's messages keep
// every part as sent, earlier messages' parts too, and Responses'
// messages are text.
func TestPartsIn(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "input", Model: "m"})
	tests := []struct {
		name, route, body string
		want              string // the input's parts
	}{
		{"chat image data URL", RouteChat, userContent(`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pngB64 + `","detail":"low"}}`),
			`[{"inline_data":{"mime_type":"image/png","data":"` + pngB64 + `"}}]`},
		{"chat image https URL", RouteChat, userContent(`{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}`),
			`[{"file_data":{"mime_type":"image/png","file_uri":"https://example.com/cat.png"}}]`},
		{"chat image URL without a known extension", RouteChat, userContent(`{"type":"image_url","image_url":{"url":"https://example.com/cat"}}`),
			`[{"file_data":{"file_uri":"https://example.com/cat"}}]`},
		{"chat input_audio", RouteChat, userContent(`{"type":"input_audio","input_audio":{"data":"` + wavB64 + `","format":"wav"}},` +
			`{"type":"input_audio","input_audio":{"data":"` + mp3B64 + `","format":"mp3"}}`),
			`[{"inline_data":{"mime_type":"audio/wav","data":"` + wavB64 + `"}},{"inline_data":{"mime_type":"audio/mpeg","data":"` + mp3B64 + `"}}]`},
		{"chat file data URL", RouteChat, userContent(`{"type":"file","file":{"file_data":"data:application/pdf;base64,` + pdfB64 + `","filename":"r.pdf"}}`),
			`[{"inline_data":{"mime_type":"application/pdf","display_name":"r.pdf","data":"` + pdfB64 + `"}}]`},
		{"chat file bare base64", RouteChat, userContent(`{"type":"file","file":{"file_data":"` + pdfB64 + `","filename":"r.pdf"}}`),
			`[{"inline_data":{"mime_type":"application/pdf","display_name":"r.pdf","data":"` + pdfB64 + `"}}]`},
		{"chat file bare base64, no name", RouteChat, userContent(`{"type":"file","file":{"file_data":"AAEC"}}`),
			`[{"inline_data":{"mime_type":"application/octet-stream","data":"AAEC"}}]`},
		{"chat escaped slashes", RouteChat, userContent(`{"type":"image_url","image_url":{"url":"data:image\/png;base64,` + strings.ReplaceAll(pngB64, "/", `\/`) + `"}}`),
			`[{"inline_data":{"mime_type":"image/png","data":"` + pngB64 + `"}}]`},
		{"responses input_image", RouteResponses, userInput(`{"type":"input_image","image_url":"data:image/png;base64,` + pngB64 + `","detail":"auto"},` +
			`{"type":"input_image","image_url":"https://example.com/a.jpg"}`),
			`[{"inline_data":{"mime_type":"image/png","data":"` + pngB64 + `"}},{"file_data":{"mime_type":"image/jpeg","file_uri":"https://example.com/a.jpg"}}]`},
		{"responses input_file", RouteResponses, userInput(`{"type":"input_file","file_data":"data:application/pdf;base64,` + pdfB64 + `","filename":"r.pdf"},` +
			`{"type":"input_file","file_url":"https://example.com/r.pdf","filename":"remote.pdf"}`),
			`[{"inline_data":{"mime_type":"application/pdf","display_name":"r.pdf","data":"` + pdfB64 + `"}},` +
				`{"file_data":{"mime_type":"application/pdf","display_name":"remote.pdf","file_uri":"https://example.com/r.pdf"}}]`},
		{"responses input_audio", RouteResponses, userInput(`{"type":"input_audio","input_audio":{"data":"` + wavB64 + `","format":"wav"}}`),
			`[{"inline_data":{"mime_type":"audio/wav","data":"` + wavB64 + `"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, answer := post(t, url+tt.route, tt.body)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, answer)
			}
			got, _ := agentInput(t, tt.route, answer)
			var in struct {
				Message  string
				Messages json.RawMessage
				Parts    json.RawMessage
			}
			if err := json.Unmarshal(got, &in); err != nil {
				t.Fatal(err)
			}
			if string(in.Parts) != tt.want {
				t.Errorf("the input's parts = %s\nwant %s", in.Parts, tt.want)
			}
			if in.Message != "look" {
				t.Errorf("the input's message = %q, want the text parts' text", in.Message)
			}
			if tt.route == RouteChat {
				var body struct{ Messages json.RawMessage }
				json.Unmarshal([]byte(tt.body), &body)
				var got, sent any // the agent's JSON is its own (Python's), the values the same
				json.Unmarshal(in.Messages, &got)
				json.Unmarshal(body.Messages, &sent)
				if !reflect.DeepEqual(got, sent) {
					t.Errorf("the input's messages = %s, want them as sent", in.Messages)
				}
			} else if !strings.Contains(string(in.Messages), `[{"role":"user","content":"look"}]`) {
				t.Errorf("the input's messages = %s, want the text", in.Messages)
			}
		})
	}
	_, answer := post(t, url+RouteChat, chatBody("m", "hi", false))
	if got, _ := agentInput(t, RouteChat, answer); strings.Contains(string(got), `"parts"`) {
		t.Errorf("a message without parts: the input %s has parts", got)
	}
}

// TestPartsInRefused: a caller's part the door cannot carry is refused
// before the call starts, in OpenAI's error shape naming the part's
// parameter: a file_id (there is no files API), base64 that is not, a
// media type with a CR or LF, a data URL naming another type than its
// bytes, an audio format not wav or mp3, a data URL that is not base64;
// a part over limits.parts.bytes, or parts over limits.parts.total, 413.
func TestPartsInRefused(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {parts: {bytes: 2KiB, total: 3KiB}}\n")
	s.Protocols = []string{Name}
	url := s.serve(t, Options{Method: "input", Model: "m"})
	kib := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 1600)...))
	big := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3000)...))
	image := func(u string) string { return `{"type":"image_url","image_url":{"url":"` + u + `"}}` }
	tests := []struct {
		name, route, body string
		status            int
		param, code, says string
	}{
		{"chat file_id", RouteChat, userContent(`{"type":"file","file":{"file_id":"file-abc"}}`),
			400, "messages[2].content[1].file.file_id", "unsupported_value", "no files API"},
		{"responses input_image file_id", RouteResponses, userInput(`{"type":"input_image","file_id":"file-abc"}`),
			400, "input[0].content[1].file_id", "unsupported_value", "no files API"},
		{"responses input_file file_id", RouteResponses, userInput(`{"type":"input_file","file_id":"file-abc"}`),
			400, "input[0].content[1].file_id", "unsupported_value", "no files API"},
		{"invalid base64", RouteChat, userContent(image("data:image/png;base64,iVBO*w0KGgo=")),
			400, "messages[2].content[1].image_url.url", "invalid_value", "not base64"},
		{"CR LF in the type", RouteChat, userContent(image(`data:image/png\r\nX-Evil: 1;base64,` + pngB64)),
			400, "messages[2].content[1].image_url.url", "invalid_value", "control character"},
		{"the bytes are another type", RouteChat, userContent(image("data:image/jpeg;base64," + pngB64)),
			400, "messages[2].content[1].image_url.url", "invalid_value", "the bytes are image/png, not image/jpeg"},
		{"text named an image", RouteResponses, userInput(`{"type":"input_image","image_url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString([]byte("<html>hello</html>")) + `"}`),
			400, "input[0].content[1].image_url", "invalid_value", "the bytes are text"},
		{"a data URL not base64", RouteChat, userContent(image("data:text/plain,hello")),
			400, "messages[2].content[1].image_url.url", "invalid_value", "must be base64"},
		{"audio format", RouteChat, userContent(`{"type":"input_audio","input_audio":{"data":"` + wavB64 + `","format":"ogg"}}`),
			400, "messages[2].content[1].input_audio.format", "invalid_value", "wav or mp3"},
		{"a relative URL", RouteChat, userContent(image("cat.png")),
			400, "messages[2].content[1].image_url.url", "invalid_value", "not an absolute URI"},
		{"over limits.parts.bytes", RouteChat, userContent(image("data:image/png;base64," + big)),
			413, "messages[2].content[1].image_url.url", "part_too_large", "limits.parts.bytes"},
		{"over limits.parts.total", RouteResponses, userInput(`{"type":"input_image","image_url":"data:image/png;base64,` + kib + `"},` +
			`{"type":"input_image","image_url":"data:image/png;base64,` + kib + `"}`),
			413, "input[0].content[2].image_url", "part_too_large", "limits.parts.total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.logs.TakeAll()
			resp, answer := post(t, url+tt.route, tt.body)
			e, ok := readError(t, answer)
			if resp.StatusCode != tt.status || !ok || e.Type != "invalid_request_error" || str(e.Param) != tt.param || str(e.Code) != tt.code ||
				!strings.Contains(e.Message, tt.says) {
				t.Errorf("%d %s\nwant %d, param %s, code %s, saying %q", resp.StatusCode, answer, tt.status, tt.param, tt.code, tt.says)
			}
			reason := map[int]string{400: "BAD_REQUEST", 413: "PART_TOO_LARGE"}[tt.status]
			checkRefusal(t, s, tt.status, reason, tt.route)
		})
	}
}

// TestManyTinyParts: 10,000 tiny parts in one message, within the
// request's limits, all reach the agent, in order.
func TestManyTinyParts(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "input", Model: "m"})
	var b strings.Builder
	for i := range 10_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"input_file","file_data":"%s"}`, base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%04d", i))))
	}
	resp, answer := post(t, url+RouteResponses, userInput(b.String()))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %.300s", resp.StatusCode, answer)
	}
	got, _ := agentInput(t, RouteResponses, answer)
	var in struct {
		Parts []struct {
			InlineData struct{ Data []byte } `json:"inline_data"`
		}
	}
	if err := json.Unmarshal(got, &in); err != nil || len(in.Parts) != 10_000 {
		t.Fatalf("the agent got %d parts (%v), want 10000", len(in.Parts), err)
	}
	for i, p := range in.Parts {
		if want := fmt.Sprintf("%04d", i); string(p.InlineData.Data) != want {
			t.Fatalf("part %d is %q, want %q", i, p.InlineData.Data, want)
		}
	}
}

// The text the agent's /parts answers, as both APIs write what is not an
// image item: its parts as Markdown, in order with its text.
var (
	partsPDF  = `[report.pdf](https://example.com/r%281%29.pdf)`
	partsData = `{"total":12.5}`
	partsPNG  = `![chart.png](data:image/png;base64,` + pngB64 + `)`
)

// TestPartsOut: the agent's parts reach the caller as each API can carry
// them. Chat completions, streamed or whole, has them in the content, in
// order with the text: an inline image a Markdown image of its data URL,
// a file a Markdown link to its URI (parentheses percent-encoded), data
// its JSON. The Responses API answers an inline PNG as an
// image_generation_call output item after the message, its result the
// agent's base64, streamed as output_item.added, the
// image_generation_call events and output_item.done, and whole in
// response.completed; its other parts are the message's text as in chat.
// A unary method's whole answer has its parts after the text.
func TestPartsOut(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	streamed := s.serve(t, Options{Method: "parts", Model: "m"})
	unary := s.serve(t, Options{Method: "parts_unary", Model: "m"})

	chatWant := "Here is the chart:" + partsPNG + " and the report " + partsPDF + partsData
	_, answer := post(t, streamed+RouteChat, chatBody("m", "hi", true))
	if content, _, _, done := chatStream(t, answer); content != chatWant || !done {
		t.Errorf("chat stream: content %q (done %t)\nwant %q", content, done, chatWant)
	}
	for _, url := range []string{streamed, unary} {
		_, answer = post(t, url+RouteChat, chatBody("m", "hi", false))
		want := chatWant
		if url == unary {
			want = "Here is the chart: and the report " + partsPNG + partsPDF + partsData
		}
		var c struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if json.Unmarshal([]byte(answer), &c) != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != want {
			t.Errorf("chat whole (%s): %s\nwant content %q", url, answer, want)
		}
	}

	type item struct {
		ID, Type, Status string
		Result           *string
		Content          []struct{ Text string }
	}
	type responseObject struct {
		Status string
		Output []item
	}
	checkOutput := func(what string, r responseObject, text string) {
		t.Helper()
		if r.Status != "completed" || len(r.Output) != 2 || r.Output[0].Type != "message" || len(r.Output[0].Content) != 1 ||
			r.Output[0].Content[0].Text != text || r.Output[1].Type != "image_generation_call" || r.Output[1].Status != "completed" ||
			r.Output[1].Result == nil || *r.Output[1].Result != pngB64 || !strings.HasPrefix(r.Output[1].ID, "ig_") {
			t.Errorf("%s: %+v, want the message %q and the image's item", what, r, text)
		}
	}
	respText := "Here is the chart: and the report " + partsPDF + partsData
	for _, url := range []string{streamed, unary} {
		_, answer = post(t, url+RouteResponses, `{"model":"m","input":"hi"}`)
		var r responseObject
		if err := json.Unmarshal([]byte(answer), &r); err != nil {
			t.Fatalf("responses whole: %s (%v)", answer, err)
		}
		want := respText
		if url == unary {
			want = "Here is the chart: and the report " + partsPDF + partsData
		}
		checkOutput("responses whole ("+url+")", r, want)
	}

	_, answer = post(t, streamed+RouteResponses, `{"model":"m","input":"hi","stream":true}`)
	types, data := events(t, answer)
	wantTypes := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_item.added", "response.image_generation_call.in_progress",
		"response.image_generation_call.generating", "response.image_generation_call.completed", "response.output_item.done",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(types, " ") != strings.Join(wantTypes, " ") {
		t.Fatalf("responses stream: events %q\nwant %q", types, wantTypes)
	}
	var text string
	for i, d := range data {
		var e struct {
			Type           string
			SequenceNumber int  `json:"sequence_number"`
			OutputIndex    *int `json:"output_index"`
			Delta          string
			Item           *item
			Response       *responseObject
		}
		if err := json.Unmarshal([]byte(d), &e); err != nil || e.Type != types[i] || e.SequenceNumber != i {
			t.Fatalf("event %d %s (%v): want type %s, sequence_number %d", i, d, err, types[i], i)
		}
		switch {
		case e.Type == "response.output_text.delta":
			text += e.Delta
		case e.Type == "response.output_item.added" && i == 5:
			if e.Item == nil || e.Item.Type != "image_generation_call" || e.Item.Status != "in_progress" || e.Item.Result != nil || *e.OutputIndex != 1 {
				t.Errorf("the image's output_item.added: %s", d)
			}
		case strings.HasPrefix(e.Type, "response.image_generation_call."):
			if *e.OutputIndex != 1 || !strings.Contains(d, `"item_id":"ig_`) {
				t.Errorf("%s: %s, want output_index 1 and the item's id", e.Type, d)
			}
		case e.Type == "response.output_item.done" && i == 9:
			if e.Item == nil || e.Item.Type != "image_generation_call" || e.Item.Result == nil || *e.Item.Result != pngB64 || *e.OutputIndex != 1 {
				t.Errorf("the image's output_item.done: %s", d)
			}
		case e.Type == "response.completed":
			checkOutput("response.completed", *e.Response, respText)
		}
	}
	if text != respText {
		t.Errorf("responses stream: text %q, want %q", text, respText)
	}
}

// TestPartTooLargeOut: an agent's part over limits.parts.bytes ends the
// call with PART_TOO_LARGE, as each API ends a failed call: 502 and the
// error object before the first byte (a whole answer), the error event
// of a chat stream, response.failed of a Responses stream.
func TestPartTooLargeOut(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {parts: {bytes: 1KiB}}\n")
	url := s.serve(t, Options{Method: "big_part", Model: "m"})
	for _, route := range []string{RouteChat, RouteResponses} {
		resp, answer := post(t, url+route, chatBody("m", "hi", false)[:len(chatBody("m", "hi", false))-1]+`,"input":"hi"}`)
		if e, ok := readError(t, answer); resp.StatusCode != 502 || !ok || str(e.Code) != "part_too_large" || !strings.Contains(e.Message, "limits.parts.bytes") {
			t.Errorf("%s whole: %d %s, want 502 part_too_large", route, resp.StatusCode, answer)
		}
	}
	_, answer := post(t, url+RouteChat, chatBody("m", "hi", true))
	if content, _, _, done := chatStream(t, answer); done || content != "big " || !strings.Contains(answer, `"code":"part_too_large"`) {
		t.Errorf("chat stream: %s, want big then the error part_too_large", answer)
	}
	_, answer = post(t, url+RouteResponses, `{"model":"m","input":"hi","stream":true}`)
	if types, data := events(t, answer); types[len(types)-1] != "response.failed" || !strings.Contains(data[len(data)-1], `"code":"part_too_large"`) {
		t.Errorf("responses stream: %s, want response.failed part_too_large", answer)
	}
}

// hugePart is a chat completions request whose one image is n bytes of
// base64, generated as it is read: the test never holds it.
func hugePart(n int64) io.Reader {
	head := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(repeatReader('A'), n), strings.NewReader(`"}}]}]}`))
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestHugePartRefused: a 200 MB part is refused 413 before it is held,
// with or without a Content-Length: the body is capped by
// limits.request_bytes (10 MiB by default) before any part is read, so
// the sidecar allocates a small fraction of what was sent.
func TestHugePartRefused(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "input", Model: "m"})
	const size = 200 << 20
	for _, length := range []bool{true, false} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		req, err := http.NewRequest(http.MethodPost, url+RouteChat, hugePart(size))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if length {
			req.ContentLength = size + 200
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("Content-Length %t: %v", length, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		runtime.ReadMemStats(&after)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("Content-Length %t: a 200 MB part answered %d %s, want 413", length, resp.StatusCode, body)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
			t.Errorf("Content-Length %t: a 200 MB part allocated %d MiB, want under 100, half of it (read at most limits.request_bytes)", length, alloc>>20)
		} else {
			t.Logf("Content-Length %t: a 200 MB part allocated %d MiB", length, alloc>>20)
		}
	}
}
