package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

const callUsage = `Usage: sidecar call [flags] METHOD [key=value ...]
       (flags may also follow METHOD; after -- every argument is a field)

Calls a running sidecar the way the platform does and prints what comes
back; streamed lines are printed as they arrive. Exits 1 when the call
failed: a non-2xx answer, or a stream that ended with an error line.

  key=value          an input field; the value is taken as JSON when it parses
                     (n=3, ok=true, tags='["a"]'), else as a string
Flags:
  --url URL          the sidecar (default http://127.0.0.1:$PORT, else :8080)
  --stream           call the streaming route (:streamQuery)
  --input JSON       the input object; key=value fields are added to it
  --double-encoded   send the body as a JSON string holding the envelope,
                     as some platform clients do
  --sse              print stream lines with SSE framing, as ?alt=sse shows them

Docs: docs/cli.md in the source (github.com/sidecar-dev/sidecar)
`

// runCall is `sidecar call`.
func runCall(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sidecar call", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("url", "", "")
	stream := fs.Bool("stream", false, "")
	input := fs.String("input", "", "")
	double := fs.Bool("double-encoded", false, "")
	sse := fs.Bool("sse", false, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, callUsage)
			return nil
		}
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar call: %v\n\n%s", err, callUsage)}
	}
	if len(pos) < 1 {
		return &exitError{code: 2, msg: "sidecar call: no METHOD\n\n" + callUsage}
	}
	method := pos[0]
	body, err := callBody(method, *input, pos[1:], *double)
	if err != nil {
		return &exitError{code: 2, msg: "sidecar call: " + err.Error()}
	}
	if *url == "" {
		port := getenv("PORT")
		if port == "" {
			port = "8080"
		}
		*url = "http://127.0.0.1:" + port
	}
	route := core.RouteUnary
	if *stream {
		route = core.RouteStream
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*url, "/")+route, bytes.NewReader(body))
	if err != nil {
		return &exitError{code: 2, msg: "sidecar call: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("calling %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		msg := fmt.Sprintf("sidecar call: %s answered %d: %s", route, resp.StatusCode, bytes.TrimSpace(b))
		if hint := routeHint(resp.StatusCode, b, method, *stream); hint != "" {
			msg = "sidecar call: " + hint + "\n(" + strings.TrimPrefix(msg, "sidecar call: ") + ")"
		}
		return &exitError{code: 1, msg: msg}
	}
	r := bufio.NewReader(resp.Body)
	var last []byte
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			if *sse && *stream {
				fmt.Fprintf(stdout, "data: %s\n\n", line)
			} else {
				fmt.Fprintf(stdout, "%s\n", line)
			}
			last = line
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the reply: %w", err)
		}
	}
	if msg, ok := finalError(last); *stream && ok {
		return &exitError{code: 1, msg: "sidecar call: the stream ended with an error: " + msg}
	}
	return nil
}

// parseInterleaved parses fs's flags wherever they stand among args, before
// the method or after it (`sidecar call chat --stream k=v`), and returns
// the other arguments in order. After "--" every argument is one of them.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// routeHint is what to change when the sidecar refused a call for its
// route: a streaming method called without --stream (the platform's 400
// says to call :streamQuery, which means nothing to the command line), or
// a unary one with it. "" for any other answer.
func routeHint(status int, body []byte, method string, stream bool) string {
	if status != http.StatusBadRequest {
		return ""
	}
	switch {
	case !stream && bytes.Contains(body, []byte("is a streaming method")):
		return fmt.Sprintf("%q is a streaming method: add --stream (sidecar call --stream %s …)", method, method)
	case stream && bytes.Contains(body, []byte("is a unary method")):
		return fmt.Sprintf("%q is a unary method: drop --stream (sidecar call %s …)", method, method)
	}
	return ""
}

// finalError reads a stream's final error line, in Google's error model:
// {"error": {"code": 504, "message": "…", "status": "DEADLINE_EXCEEDED",
// "details": [{"reason": "TIMEOUT", …}]}}. It reports false for any other
// line. A record the agent sent is never such a line: the sidecar ends the
// stream at a record that is an {"error": …} object.
func finalError(line []byte) (string, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(line, &top) != nil || len(top) != 1 || top["error"] == nil {
		return "", false
	}
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	}
	if json.Unmarshal(top["error"], &e) != nil {
		return string(top["error"]), true
	}
	msg := fmt.Sprintf("%d %s", e.Code, e.Status)
	for _, d := range e.Details {
		if d.Reason != "" {
			msg += " (" + d.Reason + ")"
			break
		}
	}
	return msg + ": " + e.Message, true
}

// callBody builds the platform envelope for METHOD.
func callBody(method, input string, fields []string, double bool) ([]byte, error) {
	in := map[string]json.RawMessage{}
	if input != "" {
		if err := json.Unmarshal([]byte(input), &in); err != nil || in == nil {
			return nil, fmt.Errorf("--input is not a JSON object: %s", input)
		}
	}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", f)
		}
		if json.Valid([]byte(v)) {
			in[k] = json.RawMessage(v)
		} else {
			in[k], _ = json.Marshal(v)
		}
	}
	body, err := json.Marshal(map[string]any{"class_method": method, "input": in})
	if err != nil {
		return nil, err
	}
	if double {
		return json.Marshal(string(body))
	}
	return body, nil
}
