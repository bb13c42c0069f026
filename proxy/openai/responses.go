package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// response is one Responses API request's answer (a core.Writer): a
// response object, or its stream of typed events, each "event: <type>"
// and "data: {"type": <type>, "sequence_number": n, …}", in the order the
// API sends them for one message of output text: response.created,
// response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta per piece,
// response.output_text.done, response.content_part.done,
// response.output_item.done, response.completed; or, for a failure after
// the first byte, response.failed with the error.
type response struct {
	id, item string
	created  int64
	model    string
	seq      int

	// text is the answer so far, escaped, which the closing events carry
	// whole: at most max bytes (limits.reply_bytes); past it the encoder
	// stops (over), the stream ends failed and the agent's call ends. It
	// is the stream's one copy of the answer: the closing events are
	// written around it (mark), never built whole.
	text frames.Text
	max  int64
	over bool
	// gather: a request without stream, answered from the agent's
	// stream (whole).
	gather bool
	// images are the image_generation_call items of the agent's images
	// (output items 1, 2, …, after the message), which the closing
	// events carry whole: bounded by limits.parts.total, as the mapping
	// stage counts the agent's parts.
	images [][]byte
}

func (d *Door) newResponse() *response {
	return &response{id: newID("resp_"), item: newID("msg_"), created: time.Now().Unix(), model: d.opts.Model, max: d.replyBytes}
}

// The response.output_text.delta event around its sequence number and
// its delta, the item's id left to place.
const (
	deltaHead = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":"
	deltaItem = `,"item_id":"`
	deltaText = `","output_index":0,"content_index":0,"delta":"`
	deltaEnd  = `","logprobs":[]}`
)

// errTextTooLarge ends a stream whose text outgrew what its closing
// events may carry.
var errTextTooLarge = fmt.Errorf("%w: a streamed response's closing events carry its whole text", core.ErrReplyTooLarge)

// stopped is why the stream stopped reading the records: its text
// outgrew the cap.
func (rs *response) stopped() error {
	if rs.over {
		return errTextTooLarge
	}
	return nil
}

// object appends the response object: status, its output (JSON items),
// and error (JSON, "" for null).
func (rs *response) object(dst []byte, status, output, errObj string) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, rs.id...)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, rs.created, 10)
	dst = append(append(append(dst, `,"status":"`...), status...), `","error":`...)
	if errObj == "" {
		errObj = "null"
	}
	dst = append(append(dst, errObj...), `,"incomplete_details":null,"model":`...)
	dst = appendQuoted(dst, rs.model)
	dst = append(append(append(dst, `,"output":[`...), output...), `],"usage":`...)
	if status == "completed" {
		return append(dst, `{"input_tokens":0,"output_tokens":0,"total_tokens":0}}`...)
	}
	return append(dst, `null}`...)
}

// textPart is the output_text content part of text (escaped).
func textPart(text string) string {
	return `{"type":"output_text","text":"` + text + `","annotations":[]}`
}

// mark stands for the text in an answer or a closing event built around
// it, which is then written in pieces: the JSON before the mark, the
// text, the JSON after it (cut). No JSON the door builds holds a raw NUL:
// its ids are its own, the model's name has no control character, and
// every text is JSON-escaped.
const mark = "\x00"

// cut is b split at its mark.
func cut(b []byte) (before, after []byte) {
	before, after, _ = bytes.Cut(b, []byte(mark))
	return before, after
}

// item is the message output item, its content parts given.
func (rs *response) message(status, content string) string {
	return `{"id":"` + rs.item + `","type":"message","status":"` + status + `","role":"assistant","content":[` + content + `]}`
}

// WriteOutput answers a request without stream: the completed response
// of the output's text (its reasoning is not written), 200, flushed.
func (rs *response) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	text, _, parts := textOf(out)
	blocks := one(text)
	for _, p := range parts {
		if !rs.keepImage(p) {
			blocks = append(blocks, partText(nil, p)) // after the text: a whole answer keeps them apart
		}
	}
	return rs.writeWhole(w, blocks, nil)
}

// writeWhole writes the completed response of text (escaped, in
// blocks) and its images, written from them as they are; reasoning is
// not written.
func (rs *response) writeWhole(w http.ResponseWriter, text, _ [][]byte) (int, error) {
	return writeJSON(w, rs.around(rs.object(nil, "completed", rs.output(), ""), text)...)
}

// output is the completed response's output, marked: the message, its
// text at the first mark, the images' items at the second.
func (rs *response) output() string {
	return rs.message("completed", textPart(mark)) + mark
}

// around is the pieces of b, JSON marked twice (output): text's blocks
// at the first mark, the image items, each after a comma, at the second.
func (rs *response) around(b []byte, text [][]byte) [][]byte {
	before, rest := cut(b)
	mid, after := cut(rest)
	data := make([][]byte, 0, len(text)+2*len(rs.images)+3)
	data = append(append(append(data, before), text...), mid)
	for _, im := range rs.images {
		data = append(data, []byte{','}, im)
	}
	return append(data, after)
}

// keepImage keeps p as an image_generation_call item when it is one
// (isImageItem), and reports whether it was: a copy of its base64,
// which p's record may not outlive.
func (rs *response) keepImage(p *part.Part) bool {
	if !isImageItem(p) {
		return false
	}
	rs.images = append(rs.images, imageItem(nil, rs.imageID(len(rs.images)), p))
	return true
}

// imageID is the id of image n's item.
func (rs *response) imageID(n int) string {
	return "ig_" + strings.TrimPrefix(rs.item, "msg_") + "_" + strconv.Itoa(n)
}

// image appends the events of an image's item, output item 1 + its
// number, each a frame of its own (the stream's frames end "\n\n", the
// events here are joined by it): response.output_item.added (in
// progress, no result yet), response.image_generation_call.in_progress,
// .generating and .completed, and response.output_item.done with the
// item, its result the image's base64; the item is kept for
// response.completed.
func (rs *response) image(dst []byte, p *part.Part) []byte {
	n := len(rs.images)
	id := rs.imageID(n)
	rs.keepImage(p)
	at := `"output_index":` + strconv.Itoa(n+1) + `,"item_id":"` + id + `"`
	dst = rs.event(dst, "response.output_item.added", `"output_index":`+strconv.Itoa(n+1)+
		`,"item":{"id":"`+id+`","type":"image_generation_call","status":"in_progress","result":null}`)
	for _, typ := range []string{"in_progress", "generating", "completed"} {
		dst = rs.event(append(dst, "\n\n"...), "response.image_generation_call."+typ, at)
	}
	before, after := cut(rs.event(nil, "response.output_item.done", `"output_index":`+strconv.Itoa(n+1)+`,"item":`+mark))
	dst = append(append(append(dst, "\n\n"...), before...), rs.images[n]...)
	return append(dst, after...)
}

// event appends one event's frame: "event: <type>", then its data, the
// type and sequence number first, then members (JSON members, or "").
func (rs *response) event(dst []byte, typ, members string) []byte {
	dst = append(append(append(dst, "event: "...), typ...), "\ndata: {\"type\":\""...)
	dst = append(append(dst, typ...), `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(rs.seq), 10)
	rs.seq++
	if members != "" {
		dst = append(dst, ',')
		dst = append(dst, members...)
	}
	return append(dst, '}')
}

// at is the members that place an event in the one message's one part.
func (rs *response) at() string {
	return `"item_id":"` + rs.item + `","output_index":0,"content_index":0`
}

// begin is the frames that open the stream, before the first piece.
func (rs *response) begin() [][]byte {
	inProgress := string(rs.object(nil, "in_progress", "", ""))
	return [][]byte{
		rs.event(nil, "response.created", `"response":`+inProgress),
		rs.event(nil, "response.in_progress", `"response":`+inProgress),
		rs.event(nil, "response.output_item.added", `"output_index":0,"item":`+rs.message("in_progress", "")),
		rs.event(nil, "response.content_part.added", rs.at()+`,"part":`+textPart("")),
	}
}

// delta appends the response.output_text.delta of a piece of text, and
// keeps the text for the closing events; reasoning writes none. A piece
// past the cap writes none and stops the stream (stopped).
func (rs *response) delta(dst []byte, p piece) []byte {
	if p.reasoning || rs.over {
		return nil
	}
	if p.part != nil {
		if isImageItem(p.part) {
			return rs.image(dst, p.part)
		}
		p.text = partText(nil, p.part)
	}
	if rs.max > 0 && rs.text.Len()+int64(len(p.text)) > rs.max {
		rs.over = true
		return nil
	}
	rs.text.Append(p.text)
	dst = strconv.AppendInt(append(dst, deltaHead...), int64(rs.seq), 10)
	rs.seq++
	dst = append(append(append(dst, deltaItem...), rs.item...), deltaText...)
	return append(append(dst, p.text...), deltaEnd...)
}

// end writes the frames that close a stream whose records ended
// cleanly: the done events and response.completed, each carrying the
// whole text, written from the one copy the stream kept. Any other end
// (the text past its cap too) is a failure, written by failed.
func (rs *response) end(err error, frame func(data ...[]byte) error) {
	if err != nil {
		return
	}
	p := textPart(mark)
	item := rs.message("completed", p)
	blocks := rs.text.Blocks()
	data := make([][]byte, 0, len(blocks)+2)
	for _, e := range [][]byte{
		rs.event(nil, "response.output_text.done", rs.at()+`,"text":"`+mark+`","logprobs":[]`),
		rs.event(nil, "response.content_part.done", rs.at()+`,"part":`+p),
		rs.event(nil, "response.output_item.done", `"output_index":0,"item":`+item),
	} {
		before, after := cut(e)
		data = append(append(append(data[:0], before), blocks...), after)
		if frame(data...) != nil {
			return
		}
	}
	frame(rs.around(rs.event(nil, "response.completed", `"response":`+string(rs.object(nil, "completed", rs.output(), ""))), blocks)...)
}

// failed is the response.failed event of a failure after the first byte:
// the response, failed, with the error's code (the failure's reason, in
// lower case) and message.
func (rs *response) failed(f core.Failure) []byte {
	e := struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{strings.ToLower(f.Reason), f.Message}
	errObj, _ := json.Marshal(e)
	return rs.event(nil, "response.failed", `"response":`+string(rs.object(nil, "failed", "", string(errObj))))
}

// Encoder is the stream of a request with stream: the Responses API's
// events, framed "event: <type>\ndata: <JSON>\n\n". A request without
// stream whose method streams is gathered into its response (whole).
func (rs *response) Encoder(w http.ResponseWriter) core.Encoder {
	if rs.gather {
		return &whole{w: w, write: rs.writeWhole, max: rs.max, item: rs.keepImage}
	}
	return &encoder{frame: rs.delta, stop: rs.stopped, Writer: frames.New(w, "text/event-stream", "", "\n\n", frames.Hooks{
		Begin: rs.begin, EndTo: rs.end, Fail: rs.failed})}
}

// WriteError answers a call that failed before its first byte: OpenAI's
// error object with the failure's status.
func (*response) WriteError(w http.ResponseWriter, f core.Failure) { writeFailure(w, f) }
