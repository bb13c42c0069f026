package devapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

const (
	// maxRequest bounds a REST request body the emulator reads; the
	// contract listener applies its own limits.request_bytes after.
	maxRequest = 64 << 20
	// maxReply bounds a :query reply and a non-2xx body read whole.
	maxReply = 64 << 20
	// duplicatedContentType is what the platform forwards (PROTOCOLS.md F3).
	duplicatedContentType = "application/json,application/json"
)

// troubleshooting is the text the platform puts before "Error Details:"
// when a container answers non-2xx (the exact wording before it is this
// emulator's: only the status and the "Error Details: <body>" ending are
// documented, CONTRACT.md §1).
const troubleshooting = "Reasoning Engine Execution failed.\n" +
	"Please refer to our documentation (https://cloud.google.com/vertex-ai/generative-ai/docs/agent-engine/troubleshooting/use) " +
	"for checking logs and other troubleshooting tips.\n"

// writeError answers in the shape of Google's REST APIs.
func writeError(w http.ResponseWriter, code int, status, msg string) {
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message, body.Error.Status = code, msg, status
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// containerFailed answers a container's non-2xx as the platform does: 400
// FAILED_PRECONDITION ending with the container's body.
func containerFailed(w http.ResponseWriter, resp *http.Response) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	msg := fmt.Sprintf("%s(FAILED_PRECONDITION: the container answered HTTP %d.)\nError Details: %s",
		troubleshooting, resp.StatusCode, strings.TrimRight(string(b), "\r\n"))
	writeError(w, http.StatusBadRequest, "FAILED_PRECONDITION", msg)
}

// envelope reads a REST request body as the platform's proto JSON
// parser does (class_method or classMethod, input a Struct, no other
// field) and returns the container's envelope. input goes through
// JSON numbers as doubles, as a google.protobuf.Struct carries them.
// class_method and classMethod may both be given only with the same
// method: otherwise which one won would be the map's order.
func envelope(r *http.Request) ([]byte, string, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxRequest))
	if err != nil {
		return nil, "Invalid request: " + err.Error(), false
	}
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			return nil, fmt.Sprintf("Invalid JSON payload received. %s", jsonProblem(err)), false
		}
	}
	var input map[string]any
	named := map[string]string{}
	for k, v := range fields {
		switch k {
		case "class_method", "classMethod":
			if string(v) == "null" {
				continue
			}
			var m string
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, fmt.Sprintf("Invalid value at '%s' (TYPE_STRING), %s", k, clip(v)), false
			}
			named[k] = m
		case "input":
			if string(v) == "null" {
				continue
			}
			if err := json.Unmarshal(v, &input); err != nil {
				return nil, fmt.Sprintf("Invalid value at 'input' (type.googleapis.com/google.protobuf.Struct), %s", clip(v)), false
			}
		default:
			return nil, fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", k), false
		}
	}
	snake, hasSnake := named["class_method"]
	camel, hasCamel := named["classMethod"]
	if hasSnake && hasCamel && snake != camel {
		return nil, fmt.Sprintf("Invalid JSON payload received. class_method %q and classMethod %q name two methods: give one.",
			clip([]byte(snake)), clip([]byte(camel))), false
	}
	method := snake
	if !hasSnake {
		method = camel
	}
	if input == nil {
		input = map[string]any{}
	}
	env := struct {
		Method string         `json:"class_method,omitempty"`
		Input  map[string]any `json:"input"`
	}{method, input}
	return marshal(env), method, true
}

func jsonProblem(err error) string {
	if err == nil {
		return "The body is not a JSON object."
	}
	return err.Error()
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// marshal writes v as compact JSON, HTML characters as they are.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// call sends env to the contract route and answers the errors that end
// the call before a reply: a bad body, an unreachable sidecar, a non-2xx.
func (e *emulator) call(ctx context.Context, w http.ResponseWriter, r *http.Request, route string) *http.Response {
	env, msg, ok := envelope(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg)
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.contract+route, bytes.NewReader(env))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL", err.Error())
		return nil
	}
	ct := duplicatedContentType
	if e.opts.SingleContentType {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	for _, h := range []string{"Traceparent", "Tracestate", "X-Cloud-Trace-Context"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && r.Context().Err() == nil {
			writeError(w, http.StatusGatewayTimeout, "DEADLINE_EXCEEDED", "the stream was cut before the container answered (--dev-cut)")
		} else if r.Context().Err() == nil {
			writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The service is currently unavailable: the sidecar's contract listener: "+err.Error())
		}
		return nil
	}
	// The contract's Server-Timing (its phases) goes on as it is: the
	// playground draws it. The platform's own front end may not pass it.
	if v := resp.Header.Values("Server-Timing"); len(v) > 0 {
		w.Header()["Server-Timing"] = v
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		containerFailed(w, resp)
		resp.Body.Close()
		return nil
	}
	return resp
}

// query serves :query: the container's {"output": …}, its value carried
// as a google.protobuf.Value (numbers as doubles).
func (e *emulator) query(w http.ResponseWriter, r *http.Request) {
	resp := e.call(r.Context(), w, r, core.RouteUnary)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "reading the container's reply: "+err.Error())
		}
		return
	}
	var reply map[string]any
	if err := json.Unmarshal(b, &reply); err != nil || reply == nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL", "the container's reply is not a JSON object {\"output\": …}: "+clip(b))
		return
	}
	out := marshal(struct {
		Output any `json:"output"`
	}{reply["output"]})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(append(out, '\n'))
}

// framing is how :streamQuery writes the container's lines.
type framing int

const (
	framePlain framing = iota // each line as it is, "\n"-terminated
	frameSSE                  // ?alt=sse: "data: <line>\n\n"
	frameJSON                 // $alt=json: a JSON array of google.api.HttpBody
)

// frameJSON is what @google-cloud/aiplatform's REST transport reads (its
// StreamArrayParser: "[" first, then HttpBody objects as they come);
// that the real service frames :streamQuery this way is unverified.

// streamFraming reads the framing the request asks for. The Node client
// sends "?$alt=json;enum-encoding=int" (its ";" escaped or not).
func streamFraming(rawQuery string) framing {
	asJSON := false
	for _, kv := range strings.FieldsFunc(rawQuery, func(c rune) bool { return c == '&' }) {
		k, v, _ := strings.Cut(kv, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		switch {
		case k == "alt" && v == "sse":
			return frameSSE
		case (k == "$alt" || k == "alt") && (v == "json" || strings.HasPrefix(v, "json;")):
			asJSON = true
		}
	}
	if asJSON {
		return frameJSON
	}
	return framePlain
}

// streamQuery serves :streamQuery: each line of the container's stream
// the moment it arrives, one write and one flush per line, until the
// stream ends or the cut.
func (e *emulator) streamQuery(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var cancel context.CancelFunc = func() {}
	if e.opts.Cut > 0 {
		ctx, cancel = context.WithTimeout(ctx, e.opts.Cut)
	}
	defer cancel()
	resp := e.call(ctx, w, r, core.RouteStream)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	frame := streamFraming(r.URL.RawQuery)
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/json"
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if frame == frameSSE {
		h.Set("Content-Type", "text/event-stream")
	} else {
		h.Set("Content-Type", "application/json")
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if frame == frameJSON {
		w.Write([]byte("["))
	}
	rc.Flush()

	br := bufio.NewReaderSize(resp.Body, 64<<10)
	first := true
	var out []byte
	var err error
	for err == nil {
		var line []byte
		line, err = br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		out = out[:0]
		switch frame {
		case framePlain:
			out = append(append(out, line...), '\n')
		case frameSSE:
			out = append(append(append(out, "data: "...), line...), "\n\n"...)
		case frameJSON:
			if !first {
				out = append(out, ",\n"...)
			}
			out = append(out, `{"contentType":`...)
			out = append(out, marshal(ct)...)
			out = append(out, `,"data":"`...)
			out = base64.StdEncoding.AppendEncode(out, line)
			out = append(out, `"}`...)
		}
		first = false
		if _, werr := w.Write(out); werr != nil {
			return // the caller left; ctx ends the container's call
		}
		if rc.Flush() != nil {
			return
		}
	}
	if !errors.Is(err, io.EOF) {
		if r.Context().Err() != nil {
			return // the caller left
		}
		// The cut, or the contract listener gone mid-stream: the platform
		// severs the connection, it does not end the stream cleanly.
		panic(http.ErrAbortHandler)
	}
	if frame == frameJSON {
		w.Write([]byte("]"))
	}
}
