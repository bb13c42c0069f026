package openai

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The door's routes.
const (
	RouteModels    = "/v1/models"
	RouteChat      = "/v1/chat/completions"
	RouteResponses = "/v1/responses"
	RouteHealth    = "/healthz"
)

// Door is the OpenAI-compatible front door (a proxy.Door). Build it with
// New.
type Door struct {
	opts Options
	// method is the entry serving opts.Method, emitting text: the door's
	// calls go through the mapping stage whatever the entry's emit.
	method  *config.Method
	stream  bool     // the entry streams
	key     [32]byte // the api_key's SHA-256, when set
	keyed   bool
	created int64 // the model's created time: when the door was built
	models  []byte
	// replyBytes caps the text a streamed Responses answer keeps for its
	// closing events (limits.reply_bytes).
	replyBytes int64
}

// New is the door calling opts.Method of cfg's map: the entry of that
// name, else the "*" entry (streaming first). An api_key set but empty
// once its ${NAME} references are resolved is an error: the door would be
// open to anyone.
func New(cfg *config.Config, opts Options) (*Door, error) {
	var m *config.Method
	for _, e := range cfg.Methods {
		if e.Name == opts.Method {
			m = e
		}
	}
	if m == nil {
		if m = cfg.Lookup(opts.Method, true); m == nil {
			m = cfg.Lookup(opts.Method, false)
		}
	}
	if m == nil {
		return nil, fmt.Errorf("method %q is not in the method map", opts.Method)
	}
	if opts.Model == "" {
		opts.Model = opts.Method
	}
	if opts.KeySet && (len(opts.MissingEnv) > 0 || opts.APIKey == "") {
		return nil, fmt.Errorf("api_key: environment variable %s is not set (or empty): the door would let anyone in",
			strings.Join(opts.MissingEnv, ", "))
	}
	text := *m
	text.Emit = config.EmitText
	d := &Door{opts: opts, method: &text, stream: m.Mode.Streaming(), created: time.Now().Unix(),
		replyBytes: cfg.Limits.ReplyBytes}
	if opts.KeySet {
		d.key, d.keyed = sha256.Sum256([]byte(opts.APIKey)), true
	}
	d.models = modelList(opts.Model, d.created)
	return d, nil
}

// Protocol names the door in the call's log line and metrics.
func (*Door) Protocol() string { return Name }

// OriginEverywhere: a POST with another site's Origin is refused on every
// connection (proxy's Host and Origin check), not only on loopback: the
// door's callers are clients, never pages behind a runtime's front end.
func (*Door) OriginEverywhere() bool { return true }

// JSONBody: both call routes take only a body declared JSON, as every
// OpenAI client sends it; any other is refused 415 unread (proxy's
// guard: a page's text/plain POST is a CSRF).
func (*Door) JSONBody(string) bool { return true }

// Handler serves the models list, the two call routes (each served by
// the Server's call handler, which reads the body and has Open decode
// it) and /healthz; every route but /healthz checks the key (the Host
// and Origin the Server checked before: hostcheck). What it refuses goes
// through refuse (a call's log line and metrics), before the body is
// read: a caller without the key never takes a concurrency slot.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler {
	calls := map[string]http.Handler{RouteChat: call(RouteChat, d.stream), RouteResponses: call(RouteResponses, d.stream)}
	model := d.serveModel(refuse)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow, route, next := "GET, HEAD", "", health
		switch path := r.URL.Path; {
		case path == RouteHealth:
			route = RouteHealth
		case path == RouteModels:
			route, next = RouteModels, http.HandlerFunc(d.serveModels)
		case strings.HasPrefix(path, RouteModels+"/") && path != RouteModels+"/":
			route, next = RouteModels, model
		case path == RouteChat || path == RouteResponses:
			allow, route, next = http.MethodPost, path, calls[path]
		}
		if route == "" {
			refuse(w, r, "", core.NoRoute(r.URL.Path, "GET "+RouteModels+", POST "+RouteChat+", POST "+RouteResponses+" and GET "+RouteHealth))
			return
		}
		if !slices.Contains(strings.Split(allow, ", "), r.Method) {
			w.Header().Set("Allow", allow)
			refuse(w, r, route, core.NotAllowed(r.Method, r.URL.Path, allow))
			return
		}
		if route != RouteHealth && !d.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sidecar"`)
			refuse(w, r, route, refusal(http.StatusUnauthorized, "", "invalid_api_key",
				"Incorrect or missing API key: send the door's api_key as Authorization: Bearer <key>"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the door's key, when it has one:
// Authorization: Bearer <key>, compared in constant time (their SHA-256
// digests, so the key's length does not show either).
func (d *Door) authorized(r *http.Request) bool {
	if !d.keyed || auth.CallerOf(r.Context()) != nil { // a verified token (auth) stands for the key
		return true
	}
	return d.KeyAuthorized(r)
}

// HasKey reports whether the door has an api_key (proxy.Keyed).
func (d *Door) HasKey() bool { return d.keyed }

// KeyAuthorized reports whether r carries the door's api_key: on a door
// the auth section protects, a caller with the key needs no token (the
// key stays for simple setups beside an identity provider).
func (d *Door) KeyAuthorized(r *http.Request) bool {
	if !d.keyed {
		return false
	}
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(key)))
	return subtle.ConstantTimeCompare(got[:], d.key[:]) == 1
}

// serveModels answers GET /v1/models: the one model.
func (d *Door) serveModels(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(d.models)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(d.models)
	}
}

// serveModel answers GET /v1/models/{id}: the model, when id is its id;
// another id is refused, 404.
func (d *Door) serveModel(refuse core.Refuse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, RouteModels+"/")
		if id != d.opts.Model {
			refuse(w, r, RouteModels, refusal(http.StatusNotFound, "model", "model_not_found",
				fmt.Sprintf("The model %q does not exist: this door serves %q", core.Clip(id), d.opts.Model)))
			return
		}
		b := modelObject(nil, d.opts.Model, d.created)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write(b)
		}
	})
}

// modelList is /v1/models' answer.
func modelList(model string, created int64) []byte {
	return append(modelObject([]byte(`{"object":"list","data":[`), model, created), "]}"...)
}

// modelObject appends the model object.
func modelObject(dst []byte, model string, created int64) []byte {
	dst = appendQuoted(append(dst, `{"id":`...), model)
	dst = append(dst, `,"object":"model","created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	return append(dst, `,"owned_by":"sidecar"}`...)
}

// Open decodes a chat completions or responses request, its body read by
// the Server, into the call of the door's method: streamed (Agent.Stream,
// through the mapping stage) when the request's stream is true; else, for
// a method that streams, the stream gathered into the whole answer
// (whole, capped by limits.reply_bytes), and for a unary method its
// output answered once (Agent.Unary). A request it cannot read, or for
// another model, is answered here.
func (d *Door) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	refused := core.Exchange{Call: core.Call{Name: d.opts.Method}}
	req, bad := readRequest(route, body, cfg.Limits.Parts)
	if bad != nil {
		return refused, bad
	}
	if req.model != d.opts.Model {
		return refused, refusal(http.StatusNotFound, "model", "model_not_found",
			fmt.Sprintf("The model %q does not exist: this door serves %q (GET %s)", core.Clip(req.model), d.opts.Model, RouteModels))
	}
	c := core.Call{Method: d.method, Name: d.opts.Method, Header: r.Header, Route: route}
	gather := gathers(req.stream, &c)
	var w core.Writer
	if route == RouteResponses {
		rs := d.newResponse()
		rs.gather = gather
		// The agent sees the conversation's ids scoped to the caller
		// (core.Owner.Scope), the caller its own.
		owner := core.OwnerOfRequest(r)
		req.previous = scopedString(owner, req.previous)
		c.Input.Raw, w = req.input("response_id", owner.Scope(rs.id)), rs
	} else {
		ch := d.newChat()
		ch.gather, ch.max, ch.usage = gather, d.replyBytes, req.usage && req.stream
		c.Input.Raw, w = req.input("completion_id", ch.id), ch
	}
	return core.Exchange{Call: c, Stream: req.stream || gather, Writer: w}, nil
}

// WriteError answers a request refused before it was opened (busy,
// draining, over the limit) or by the Host and Origin check: OpenAI's error object with
// the failure's status.
func (*Door) WriteError(w http.ResponseWriter, f core.Failure) { writeFailure(w, f) }

// newID is a random id with prefix (chatcmpl-, resp_, msg_).
func newID(prefix string) string { return prefix + strings.ReplaceAll(core.NewID(), "-", "") }
