package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

// App serves the "adk.*" handlers for one ADK app.
type App struct {
	// Client reaches the ADK api server.
	Client *upstream.Client
	// Name is the ADK app name (config adk.app).
	Name string
	// Limits bound replies and records.
	Limits config.Limits
	// SnakeKeys renames the field names of sessions and events from the
	// api servers' camelCase to AdkApp's snake_case (config adk.keys).
	SnakeKeys bool

	// How the server takes a chosen session id, learned once with a probe
	// session of the sidecar's own (see idForm), never from a caller's.
	formMu    sync.Mutex
	formKnown bool
	idInPath  bool // the server ignores an id in the create body: it goes in the path
}

// call is one class_method call being served.
type call struct {
	ctx    context.Context
	m      *config.Method
	name   string
	in     core.Input
	header http.Header
	door   bool // a door's input: user and session derived from its context (doorInput)
}

// Unary serves a unary handler method and returns the value of its
// {"output": …}.
func (a *App) Unary(ctx context.Context, m *config.Method, name string, in core.Input, h http.Header) (json.RawMessage, error) {
	out, err := a.unary(call{ctx: ctx, m: m, name: name, in: in, header: h})
	if err != nil || !a.SnakeKeys {
		return out, err
	}
	return snakeKeys(out)
}

// unary serves c with its handler's unary function, once the inputs the
// table requires are there.
func (a *App) unary(c call) (json.RawMessage, error) {
	h := handlers[c.m.Handler]
	if h.unary == nil {
		return nil, fmt.Errorf("handler %s is not served on the unary route", c.m.Handler)
	}
	if err := checkRequired(c.in, h.required); err != nil {
		return nil, err
	}
	return h.unary(a, c)
}

// Stream serves a streaming handler method. The stream's errors are
// already explained (timeouts named); close, not the records' own Close,
// releases it, and deletes a session made only for this run.
func (a *App) Stream(ctx context.Context, m *config.Method, name string, in core.Input, h http.Header) (core.Records, func(), error) {
	return a.stream(call{ctx: ctx, m: m, name: name, in: in, header: h})
}

// stream serves c with its handler's streaming function, once the inputs
// the table requires are there.
func (a *App) stream(c call) (core.Records, func(), error) {
	h := handlers[c.m.Handler]
	if h.stream == nil {
		return nil, nil, fmt.Errorf("handler %s is not served on the streaming route", c.m.Handler)
	}
	if h.door {
		c.in, c.door = doorInput(c.in)
	}
	if err := checkRequired(c.in, h.required); err != nil {
		return nil, nil, err
	}
	return h.stream(a, c)
}

// send makes one request to the ADK api server at the path of parts, each
// part one segment.
func (a *App) send(c call, verb string, body any, parts ...string) (*upstream.Response, error) {
	path, raw := upstream.SegmentPath(parts...)
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding %s request: %w", c.name, err)
		}
	}
	return a.Client.Send(c.ctx, upstream.Request{
		Method: c.name, Verb: verb, Path: path, RawPath: raw, Body: b, Timeouts: c.m.Timeouts, Header: c.header,
		Phases: phasesOf(c.ctx),
	})
}

// plain reads replies as they come: JSON as JSON, empty as null.
var plain = &config.Method{Reply: config.ReplyAuto, Output: config.OutputWrap}

// json makes a request and reads its whole reply as one JSON value.
func (a *App) json(c call, verb string, body any, parts ...string) (json.RawMessage, error) {
	resp, err := a.send(c, verb, body, parts...)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	return resp.Output(plain, a.Limits.ReplyBytes, a.Limits.RecordBytes)
}

// readyMethod gives readiness requests no clocks of their own: the
// prober's context bounds them.
var readyMethod = &config.Method{}

// maxAppsShown bounds the app names an app-not-found error lists.
const maxAppsShown = 10

// Ready checks that the ADK api server serves the app: GET /list-apps
// must list it. Until that is so the sidecar is not ready, and the error
// (meant for /healthz) names the app and the apps the server has. The
// first time it passes it also learns how the server takes a chosen
// session id (idForm).
func (a *App) Ready(ctx context.Context) error {
	c := call{ctx: ctx, m: readyMethod}
	out, err := a.json(c, http.MethodGet, nil, "list-apps")
	if err != nil {
		return fmt.Errorf("listing the ADK api server's apps: %w", err)
	}
	var apps []string
	if json.Unmarshal(out, &apps) != nil {
		return errors.New("the ADK api server's GET /list-apps is not a list of app names")
	}
	if !slices.Contains(apps, a.Name) {
		return appNotFound(a.Name, apps)
	}
	_, err = a.idForm(c)
	return err
}

// appNotFound says that the server lacks the app, and which it has.
func appNotFound(name string, apps []string) error {
	if len(apps) == 0 {
		return &upstream.Mismatch{Msg: fmt.Sprintf("ADK app %q not found: the api server has no apps", name)}
	}
	shown := make([]string, 0, maxAppsShown)
	for _, app := range apps[:min(len(apps), maxAppsShown)] {
		shown = append(shown, fmt.Sprintf("%q", clip(app, 100)))
	}
	more := ""
	if n := len(apps) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return &upstream.Mismatch{Msg: fmt.Sprintf("ADK app %q not found: the api server has %s%s", name, strings.Join(shown, ", "), more)}
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
