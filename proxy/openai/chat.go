package openai

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// chat is one chat completions request's answer (a core.Writer): a
// chat.completion object, or a stream of chat.completion.chunk events and
// [DONE].
type chat struct {
	id      string
	created int64
	model   string
	// chunk opens every chunk: {"id":…,"object":"chat.completion.chunk",
	// …,"choices":[{"index":0, made once.
	head []byte
	// gather: a request without stream, answered from the agent's
	// stream (whole), keeping at most max bytes.
	gather bool
	max    int64
	// usage: the stream ends with a usage chunk (include_usage), whose
	// counts are counted, the agent's when its end carried them.
	usage   bool
	counted usage
}

func (d *Door) newChat() *chat {
	c := &chat{id: newID("chatcmpl-"), created: time.Now().Unix(), model: d.opts.Model}
	c.head = c.open(nil, "chat.completion.chunk")
	return c
}

// open appends {"id":…,"object":<object>,"created":…,"model":…,"choices":[{"index":0,
func (c *chat) open(dst []byte, object string) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, c.id...)
	dst = append(dst, `","object":"`...)
	dst = append(dst, object...)
	dst = append(dst, `","created":`...)
	dst = strconv.AppendInt(dst, c.created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendQuoted(dst, c.model)
	return append(dst, `,"choices":[{"index":0,`...)
}

// WriteOutput answers a request without stream: the chat.completion of
// the output's text (and reasoning, as reasoning_content), 200, flushed.
func (c *chat) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	text, reasoning, parts := textOf(out)
	blocks := one(text)
	for _, p := range parts {
		blocks = append(blocks, partText(nil, p)) // after the text: a whole answer keeps them apart
	}
	return c.writeWhole(w, blocks, one(reasoning))
}

// writeWhole writes the chat.completion of text and reasoning (escaped,
// in blocks), written from them as they are.
func (c *chat) writeWhole(w http.ResponseWriter, text, reasoning [][]byte) (int, error) {
	const tail = `},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`
	pieces := make([][]byte, 0, len(text)+len(reasoning)+3)
	pieces = append(pieces, append(c.open(nil, "chat.completion"), `"message":{"role":"assistant","content":"`...))
	pieces = append(pieces, text...)
	if len(reasoning) > 0 {
		pieces = append(append(pieces, []byte(`","reasoning_content":"`)), reasoning...)
	}
	return writeJSON(w, append(pieces, []byte(`"`+tail))...)
}

// chunk appends a chat.completion.chunk whose delta's members are delta
// (JSON members, written as they are) and whose finish_reason is finish
// (JSON).
func (c *chat) chunk(dst []byte, delta, finish string) []byte {
	dst = append(dst, c.head...)
	dst = append(append(append(dst, `"delta":{`...), delta...), `},"logprobs":null,"finish_reason":`...)
	return append(append(dst, finish...), `}]}`...)
}

// delta appends the chunk of one piece: content, or reasoning_content; a
// part is content, its Markdown (partText).
func (c *chat) delta(dst []byte, p piece) []byte {
	key := `"content":"`
	if p.reasoning {
		key = `"reasoning_content":"`
	}
	dst = append(append(append(dst, c.head...), `"delta":{`...), key...)
	if p.part != nil {
		dst = partText(dst, p.part)
	} else {
		dst = append(dst, p.text...)
	}
	return append(dst, `"},"logprobs":null,"finish_reason":null}]}`...)
}

// Encoder is the stream of a request with stream: a chunk with the
// assistant's role, a chunk per piece of the answer, a last chunk with
// finish_reason "stop", then [DONE]. A failure after the first byte is
// one data event of OpenAI's error object, and no [DONE]: the openai
// clients raise it. A request without stream whose method streams is
// gathered into its chat.completion (whole).
func (c *chat) Encoder(w http.ResponseWriter) core.Encoder {
	if c.gather {
		return &whole{w: w, write: c.writeWhole, max: c.max}
	}
	e := &encoder{frame: c.delta, Writer: frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{
		Begin: func() [][]byte { return [][]byte{c.chunk(nil, `"role":"assistant","content":""`, "null")} },
		End: func(err error) [][]byte {
			if err != nil {
				return nil
			}
			if c.usage {
				return [][]byte{c.chunk(nil, "", `"stop"`), c.usageChunk(), []byte("[DONE]")}
			}
			return [][]byte{c.chunk(nil, "", `"stop"`), []byte("[DONE]")}
		},
		Fail: failureBody,
	})}
	if c.usage {
		e.other = func(record []byte) {
			if u, ok := usageOf(record); ok {
				c.counted = u
			}
		}
	}
	return e
}

// usageChunk is the chunk include_usage asks for, last before [DONE]:
// choices empty, and the usage counted.
func (c *chat) usageChunk() []byte {
	dst := c.open(nil, "chat.completion.chunk")
	dst = append(dst[:len(dst)-len(`{"index":0,`)], `],"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, c.counted.prompt, 10)
	dst = strconv.AppendInt(append(dst, `,"completion_tokens":`...), c.counted.completion, 10)
	dst = strconv.AppendInt(append(dst, `,"total_tokens":`...), c.counted.total, 10)
	return append(dst, "}}"...)
}

// WriteError answers a call that failed before its first byte: OpenAI's
// error object with the failure's status.
func (*chat) WriteError(w http.ResponseWriter, f core.Failure) { writeFailure(w, f) }

// writeJSON writes the JSON made of pieces, 200, flushed at once: each
// piece as it is, so a whole answer is written from the copy that holds
// it, never copied into one body.
func writeJSON(w http.ResponseWriter, pieces ...[]byte) (int, error) {
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	n := 0
	for _, p := range pieces {
		k, err := w.Write(p)
		if n += k; err != nil {
			return n, err
		}
	}
	return n, http.NewResponseController(w).Flush()
}

// appendQuoted appends s as a JSON string.
func appendQuoted(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}
