package a2a

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/proxy/internal/jsonrpc"
	gpart "github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// version is the A2A protocol version of one request: it names the
// methods and shapes the objects.
type version int

const (
	v03 version = iota // A2A 0.3: "kind" discriminators, lower-case states, "final"
	v10                // A2A 1.0: ProtoJSON, SCREAMING enums, StreamResponse wrappers
	// p03 is A2A 0.3's HTTP+JSON binding (rest.go), the ProtoJSON of
	// 0.3's proto: SCREAMING enums and wrappers as 1.0, but a message's
	// parts in "content", a data part {"data": {"data": …}} (0.3's
	// DataPart holds a Struct) and "final" on a status update. It shapes
	// objects only: no JSON-RPC method is named by it.
	p03
)

// versionOf reads the A2A-Version header: none is 0.3, as the 1.0
// specification says; ok is false for a version the door does not speak.
func versionOf(h string) (v version, ok bool) {
	switch strings.TrimSpace(h) {
	case "", "0.3", "0.3.0":
		return v03, true
	case "1.0", "1.0.0":
		return v10, true
	}
	return 0, false
}

// The task states the door reaches, in A2A 0.3's spelling; 1.0 spells them
// TASK_STATE_ and the upper-case name.
const (
	stateSubmitted = "submitted"
	stateWorking   = "working"
	stateCompleted = "completed"
	stateFailed    = "failed"
	stateCanceled  = "canceled"
	// stateInputRequired and stateAuthRequired are a task whose agent
	// asked a question (questions.go): its turn ended, and it waits for
	// its caller's answer, a message naming it.
	stateInputRequired = "input-required"
	stateAuthRequired  = "auth-required"
)

func terminal(state string) bool {
	return state == stateCompleted || state == stateFailed || state == stateCanceled
}

// waiting reports whether state is a task's that waits for its caller's
// answer: not terminal, but its turn over, its stream ended.
func waiting(state string) bool {
	return state == stateInputRequired || state == stateAuthRequired
}

// settled reports whether a task in state runs no call: it ended, or
// waits for an answer. A stream of its events ends there.
func settled(state string) bool { return terminal(state) || waiting(state) }

func (v version) state(s string) string {
	switch {
	case v == v03:
		return s
	case v == p03 && s == stateCanceled:
		return "TASK_STATE_CANCELLED" // 0.3's proto spells it so
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// part is one part of a message or artifact: text, or a JSON value.
type part struct {
	Text     string
	Data     json.RawMessage // set for a data part
	Metadata json.RawMessage // a text part's metadata: a record's other members
	// kept, set instead of Text, is a task's text part as the task keeps
	// it, in blocks: its JSON is written by writeText (task.texts).
	kept *frames.Text
	// file is a file part (parts.go): its media type, name, and URI;
	// raw, for bytes, their base64 as the agent wrote it, in blocks,
	// written as kept is.
	file *gpart.Part
	raw  *frames.Text
}

// partOf is the part a record (or a unary output) becomes: an object with
// a string "text" member (an emit: text record {"text": "…"}, or an
// agent's {"seq": 1, "text": "…"}) is a text part with that text, its
// other members the part's metadata; a JSON string is its value; any other
// object is a data part; anything else is its JSON as text.
func partOf(record []byte) part {
	record = bytes.TrimSpace(record)
	if len(record) == 0 {
		return part{}
	}
	switch record[0] {
	case '"':
		var s string
		if json.Unmarshal(record, &s) == nil {
			return part{Text: s}
		}
	case '{':
		var text []byte
		texts := 0
		meta := []byte{'{'}
		rawjson.Members(record, func(key, value []byte) bool {
			if rawjson.KeyIs(key, "text") {
				texts++
				text = value
				return true
			}
			if len(meta) > 1 {
				meta = append(meta, ',')
			}
			meta = append(append(append(meta, key...), ':'), value...)
			return true
		})
		var s string
		if texts == 1 && text[0] == '"' && json.Unmarshal(text, &s) == nil {
			p := part{Text: s}
			if len(meta) > 1 {
				p.Metadata = append(meta, '}')
			}
			return p
		}
		return part{Data: bytes.Clone(record)}
	}
	return part{Text: string(record)}
}

// isEnd reports whether record is the mapping stage's end record: an
// object whose one member is "end", an object ({"end": {}}, {"end":
// {"finish_reason": "stop"}}), the last line emit: text writes at a clean
// end. It says the stream ended, which the task's final state says; it is
// not content.
func isEnd(record []byte) bool {
	record = bytes.TrimSpace(record)
	if len(record) < len(`{"end":{}}`) || record[0] != '{' ||
		!bytes.HasPrefix(bytes.TrimLeft(record[1:], " \t\r\n"), []byte(`"end"`)) {
		return false // not read through: every record of a stream comes here
	}
	members, end := 0, false
	rawjson.Members(record, func(key, value []byte) bool {
		members++
		end = rawjson.KeyIs(key, "end") && value[0] == '{'
		return members < 2
	})
	return members == 1 && end
}

func (v version) part(p part) any {
	switch {
	case p.file != nil:
		return v.filePart(p)
	case v == v03 && p.Data != nil:
		return struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}{"data", objectData(p.Data)}
	case v == v03:
		return struct {
			Kind     string          `json:"kind"`
			Text     string          `json:"text"`
			Metadata json.RawMessage `json:"metadata,omitempty"`
		}{"text", p.Text, p.Metadata}
	case v == p03 && p.Data != nil:
		type dataPart struct {
			Data json.RawMessage `json:"data"`
		}
		return struct {
			Data dataPart `json:"data"`
		}{dataPart{objectData(p.Data)}}
	case p.Data != nil:
		return struct {
			Data      json.RawMessage `json:"data"`
			MediaType string          `json:"mediaType"`
		}{p.Data, "application/json"}
	default:
		return struct {
			Text     string          `json:"text"`
			Metadata json.RawMessage `json:"metadata,omitempty"`
		}{p.Text, p.Metadata}
	}
}

func (v version) parts(ps []part) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = v.part(p)
	}
	return out
}

// message is the agent's message of a status: the agent's text (a
// failure's message), or the question a waiting task asks.
func (v version) message(t *task, text string) any {
	ps := []part{{Text: text}}
	if q := t.question; q != nil && waiting(t.state) {
		ps = questionParts(q)
	}
	return v.messageOf(t, core.NewID(), true, ps)
}

// history is t's history, its messages in v's shape; nil for none.
func (v version) history(t *task) []any {
	if len(t.history) == 0 {
		return nil
	}
	out := make([]any, len(t.history))
	for i, h := range t.history {
		out[i] = v.messageOf(t, h.id, h.agent, h.parts)
	}
	return out
}

// messageOf is a message of t's of parts ps, the agent's or (agent
// false) the caller's.
func (v version) messageOf(t *task, id string, agent bool, ps []part) any {
	type msg struct {
		Kind      string `json:"kind,omitempty"`
		Role      string `json:"role"`
		MessageID string `json:"messageId"`
		TaskID    string `json:"taskId"`
		ContextID string `json:"contextId"`
		Parts     []any  `json:"parts,omitempty"`
		// Content is p03's parts as the 0.3.0 proto names them, which
		// @a2a-js/sdk's 0.3 client reads; p03 says Parts too, as the
		// later 0.3 proto names them (a2a-go v0.3.3's a2apb.Message).
		Content []any `json:"content,omitempty"`
	}
	m := msg{Role: "agent", MessageID: id, TaskID: t.id, ContextID: t.contextID}
	role := "ROLE_AGENT"
	if !agent {
		m.Role, role = "user", "ROLE_USER"
	}
	parts := v.parts(ps)
	switch v {
	case v03:
		m.Kind, m.Parts = "message", parts
	case v10:
		m.Role, m.Parts = role, parts
	default:
		m.Role, m.Content, m.Parts = role, parts, parts
	}
	return m
}

type status struct {
	State     string `json:"state"`
	Message   any    `json:"message,omitempty"`
	Timestamp string `json:"timestamp"`
}

func (v version) status(t *task) status {
	s := status{State: v.state(t.state), Timestamp: t.updated.UTC().Format(time.RFC3339Nano)}
	if t.message != "" {
		s.Message = v.message(t, t.message)
	}
	return s
}

type artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name"`
	Parts      []any  `json:"parts"`
}

// artifactID is the one artifact of a task: the method's output.
func artifactID(t *task) string { return t.id + "-output" }

// task is the Task object of t, in v's shape.
func (v version) task(t *task) any {
	type taskObj struct {
		Kind      string     `json:"kind,omitempty"`
		ID        string     `json:"id"`
		ContextID string     `json:"contextId"`
		Status    status     `json:"status"`
		Artifacts []artifact `json:"artifacts,omitempty"`
		History   []any      `json:"history,omitempty"`
		Metadata  any        `json:"metadata,omitempty"`
	}
	o := taskObj{ID: t.id, ContextID: t.contextID, Status: v.status(t), History: v.history(t)}
	if v == v03 {
		o.Kind = "task"
	}
	if t.dropped {
		o.Metadata = map[string]string{"sidecar": droppedNote}
	}
	if t.text.Len() > 0 || len(t.parts) > 0 {
		parts := make([]part, 0, len(t.parts)+1)
		for _, p := range t.parts {
			if p.kept != nil {
				p = part{Text: textMark}
			}
			parts = append(parts, p)
		}
		if t.text.Len() > 0 {
			parts = append(parts, part{Text: textMark})
		}
		o.Artifacts = []artifact{{artifactID(t), "output", v.parts(parts)}}
	}
	return o
}

// textMark stands for a text the task keeps in blocks (frames.Text) in
// the JSON of the task, built around it: writeText writes each text,
// escaped, where marshal wrote its mark (markJSON), in order. The mark
// holds an id of this process's, so no agent's text can hold it.
var textMark = "\x00" + core.NewID() + "\x00"

// markJSON is textMark as marshal writes it, without its quotes.
var markJSON = []byte(`\u0000` + textMark[1:len(textMark)-1] + `\u0000`)

// writeText writes b, JSON holding the texts' marks, to w with each text
// in its mark's place, escaped as marshal escapes a string, a piece at a
// time through one small buffer: a text is never copied whole, nor
// escaped into garbage. It returns the bytes written.
func writeText(w io.Writer, b []byte, texts []*frames.Text) (int64, error) {
	var wrote int64
	write := func(p []byte) error {
		n, err := w.Write(p)
		wrote += int64(n)
		return err
	}
	var buf []byte
	for _, text := range texts {
		i := bytes.Index(b, markJSON)
		if i < 0 {
			break
		}
		if err := write(b[:i]); err != nil {
			return wrote, err
		}
		// A block, and each piece cut from it, ends at a character's end
		// (frames.Text, pieceEnd): escaped alone, it is what escaping
		// the whole holds there.
		for _, block := range text.Blocks() {
			for len(block) > 0 {
				n := pieceEnd(block, 8<<10)
				buf = appendEscaped(buf[:0], block[:n])
				if err := write(buf); err != nil {
					return wrote, err
				}
				block = block[n:]
			}
		}
		b = b[i+len(markJSON):]
	}
	return wrote, write(b)
}

// pieceEnd is where to cut p at most n bytes in: at the start of the
// character n falls in (three bytes back at most), or at n where p is no
// UTF-8.
func pieceEnd(p []byte, n int) int {
	if n >= len(p) {
		return len(p)
	}
	for k := n; k > 0 && k > n-utf8.UTFMax; k-- {
		if utf8.RuneStart(p[k]) {
			return k
		}
	}
	return n
}

// appendEscaped appends s as the contents of a JSON string, as marshal
// writes them: encoding/json's escapes, without the HTML ones.
func appendEscaped(b, s []byte) []byte {
	return rawjson.AppendBytesContents(b, s, rawjson.EscapeInvalid)
}

// wrap is a result in v's shape: 0.3's JSON-RPC sends the object itself
// (its "kind" says what it is), 1.0 and 0.3's HTTP+JSON a wrapper with
// one member naming it.
func (v version) wrap(name string, obj any) any {
	if v == v03 {
		return obj
	}
	return map[string]any{name: obj}
}

// statusUpdate is the event of t's status: final (0.3 only, both
// bindings) when the state is terminal.
func (v version) statusUpdate(t *task) any {
	type event struct {
		Kind      string `json:"kind,omitempty"`
		TaskID    string `json:"taskId"`
		ContextID string `json:"contextId"`
		Status    status `json:"status"`
		Final     *bool  `json:"final,omitempty"`
	}
	e := event{TaskID: t.id, ContextID: t.contextID, Status: v.status(t)}
	if v != v10 {
		final := settled(t.state)
		e.Final = &final
	}
	if v == v03 {
		e.Kind = "status-update"
	}
	return v.wrap("statusUpdate", e)
}

// artifactUpdate is the event of one record: a part of the task's one
// artifact, appended to what came before.
func (v version) artifactUpdate(t *task, p part, first bool) any {
	type event struct {
		Kind      string   `json:"kind,omitempty"`
		TaskID    string   `json:"taskId"`
		ContextID string   `json:"contextId"`
		Artifact  artifact `json:"artifact"`
		Append    bool     `json:"append"`
		LastChunk bool     `json:"lastChunk"`
	}
	e := event{TaskID: t.id, ContextID: t.contextID, Artifact: artifact{artifactID(t), "output", v.parts([]part{p})}, Append: !first}
	if v == v03 {
		e.Kind = "artifact-update"
	}
	return v.wrap("artifactUpdate", e)
}

// JSON-RPC and A2A error codes.
const (
	codeParse            = jsonrpc.CodeParse
	codeInvalidRequest   = jsonrpc.CodeInvalidRequest
	codeMethodNotFound   = jsonrpc.CodeMethodNotFound
	codeInvalidParams    = jsonrpc.CodeInvalidParams
	codeInternal         = jsonrpc.CodeInternal
	codeTaskNotFound     = -32001
	codeTaskNotCancel    = -32002
	codePushUnsupported  = -32003
	codeUnsupported      = -32004
	codeVersionUnsupport = -32009
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// droppedNote is a task's metadata when its artifact outgrew what the
// store keeps of one (limits.reply_bytes): message/stream streamed it,
// tasks/get cannot answer it.
const droppedNote = "the artifact exceeded limits.reply_bytes and is not kept; it was streamed"

// marshal is json.Marshal without HTML escaping: "<" stays one byte, as
// the caller and the agent wrote it.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(b []byte, s string) []byte {
	q, _ := marshal(s)
	return append(b, q...)
}

// response is a JSON-RPC response: its result, or its error.
func response(id json.RawMessage, result any, e *rpcError) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	type resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}
	b, err := marshal(resp{"2.0", id, result, e})
	if err != nil { // a record that is no valid JSON, which core.Records never are
		b, _ = marshal(resp{"2.0", id, nil, &rpcError{codeInternal, "encoding the response: " + err.Error()}})
	}
	return b
}
