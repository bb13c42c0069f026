package openai

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	openaigo "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestOpenAIGoParts: openai-go, OpenAI's Go client, sends an image (a
// data URL) and audio through chat completions and an image through the
// Responses API, with and without stream, to an agent process that
// echoes its input's parts back: chat's content has them as Markdown
// data URLs, and the Responses image_generation_call item's result
// decodes to the bytes sent.
func TestOpenAIGoParts(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "echo_parts", Model: "agent"})
	client := openaigo.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	png, _ := base64.StdEncoding.DecodeString(pngB64)
	image := "data:image/png;base64," + pngB64

	c, err := client.Chat.Completions.New(ctx, openaigo.ChatCompletionNewParams{
		Model: "agent",
		Messages: []openaigo.ChatCompletionMessageParamUnion{openaigo.UserMessage([]openaigo.ChatCompletionContentPartUnionParam{
			openaigo.TextContentPart("look"),
			openaigo.ImageContentPart(openaigo.ChatCompletionContentPartImageImageURLParam{URL: image}),
			openaigo.InputAudioContentPart(openaigo.ChatCompletionContentPartInputAudioInputAudioParam{Data: wavB64, Format: "wav"}),
		})},
	})
	want := "got 2 parts![image/png](" + image + ")[audio/wav](data:audio/wav;base64," + wavB64 + ")"
	if err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != want {
		t.Errorf("chat: %+v (%v)\nwant content %q", c, err, want)
	}

	params := responses.ResponseNewParams{
		Model: "agent",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				responses.ResponseInputContentParamOfInputText("look"),
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openaigo.String(image), Detail: responses.ResponseInputImageDetailAuto}},
			}, responses.EasyInputMessageRoleUser),
		}},
	}
	check := func(what string, r *responses.Response) {
		t.Helper()
		var images [][]byte
		for _, o := range r.Output {
			if o.Type == "image_generation_call" {
				b, err := base64.StdEncoding.DecodeString(o.AsImageGenerationCall().Result)
				if err != nil {
					t.Errorf("%s: the image's result: %v", what, err)
				}
				images = append(images, b)
			}
		}
		if r.Status != "completed" || r.OutputText() != "got 1 parts" || len(images) != 1 || string(images[0]) != string(png) {
			t.Errorf("%s: status %s, text %q, %d images, want completed, \"got 1 parts\" and the PNG sent", what, r.Status, r.OutputText(), len(images))
		}
	}
	r, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatalf("responses: %v", err)
	}
	check("responses", r)

	stream := client.Responses.NewStreaming(ctx, params)
	var types []string
	var done *responses.Response
	for stream.Next() {
		e := stream.Current()
		if strings.Contains(e.Type, "image") {
			types = append(types, e.Type)
		}
		if e.Type == "response.completed" {
			r := e.AsResponseCompleted().Response
			done = &r
		}
	}
	if err := stream.Err(); err != nil || done == nil {
		t.Fatalf("responses stream: %v, completed %v", err, done != nil)
	}
	check("responses stream", done)
	if got := strings.Join(types, " "); got != "response.image_generation_call.in_progress response.image_generation_call.generating response.image_generation_call.completed" {
		t.Errorf("responses stream: the image's events %s", got)
	}
}
