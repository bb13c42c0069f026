// Package devapi is sidecar dev's stand-in for the platform: a client of
// the contract, not a front door. It serves the platform's REST surface
// (reasoningEngines/{id}:query and :streamQuery, as the platform's
// clients call them), its generic passthrough (…/api/{path}, any verb, to
// the contract listener's /{path}: passthrough.go), its WebSocket routes
// (the passthrough's /reasoningEngines/ws/… twin, and the public bidi
// endpoint relayed to the live door: live.go) and the playground page on
// a loopback listener, in front of the sidecar's own contract routes.
//
// It calls the contract listener over HTTP, as the platform calls the
// container: what it shows is what the container answers. It
// applies what the platform is known to do to the request and the reply
// (CONTRACT.md §1, PROTOCOLS.md §0): the body as its clients send it,
// {"output": …} for :query, the container's lines for :streamQuery
// (framed for ?alt=sse and for $alt=json), a container's non-2xx as 400
// FAILED_PRECONDITION, a duplicated Content-Type and the 15-minute cut.
//
// It has no authentication: besides its loopback address, it refuses
// what only another site's page in the user's browser would send (a
// foreign Host or Origin, an upgrade included, a REST call not declared
// JSON; on the passthrough, the Host and Origin rules only) and forbids
// framing its page (guard.go).
package devapi

import (
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

//go:embed playground
var playground embed.FS

// DefaultCut is how long the platform lets a stream run before it cuts
// it (PROTOCOLS.md F5).
const DefaultCut = 15 * time.Minute

// Options are the platform behaviours the emulator applies.
type Options struct {
	// Cut ends a :streamQuery stream this long after it began, as the
	// platform does: the connection is closed mid-stream. Zero means
	// DefaultCut; negative, never.
	Cut time.Duration
	// SingleContentType sends the container "Content-Type:
	// application/json" instead of the platform's duplicated
	// "application/json,application/json" (PROTOCOLS.md F3).
	SingleContentType bool
	// Client calls the contract listener; nil: a client of its own with
	// no overall timeout (streams run for minutes).
	Client *http.Client
	// Doors are the sidecar's enabled doors, which the playground lists
	// with how to call each (GET /playground/doors.json).
	Doors []Door
}

// Door is one enabled door as the playground lists it.
type Door struct {
	// Protocol is its name (agent_platform, agentcore, …); URL where it
	// listens (http://127.0.0.1:8080), its direct URL: for a mounted
	// door, the contract listener's, then the mount
	// (http://127.0.0.1:8080/a2a).
	Protocol, URL string
	// Example is how to call it at URL, nil when its registration gives
	// none.
	Example *core.Example
	// Mount is the path the door is mounted under on the contract
	// listener ("/a2a"), "" for a door on a listener of its own: a
	// mounted door is also listed with its passthrough path on the dev
	// listener (PassthroughPath), the URL its clients use in production.
	Mount string
	// Passthrough is a mounted door's URL through the dev listener's
	// passthrough (its address, then PassthroughPath of the mount, then
	// the door's own path), the shape of the URL its clients use in
	// production; PassthroughExample is how to call it there. Both are
	// what the page shows first for a mounted door.
	Passthrough        string
	PassthroughExample *core.Example
	// Platform is a mounted door's public URL on Agent Platform
	// (core.PlatformBase, then the mount), when the platform's variables
	// are set: "" elsewhere, as on a laptop.
	Platform string
	// Live are the conversations the door serves: the playground's live
	// panel opens them, and the public bidi endpoint goes to the first in
	// the platform's framing.
	Live []Live
}

// emulator is the dev listener's handler.
type emulator struct {
	cfg      *config.Config
	contract string // the contract listener's base URL, no trailing "/"
	opts     Options
	client   *http.Client
	files    fs.FS
	methods  []byte       // GET /playground/methods.json
	doors    []byte       // GET /playground/doors.json
	proxy    http.Handler // the passthrough (passthrough.go)
	// bidiProxy relays the public bidi endpoint (live.go); nil: none,
	// refused with noBidi.
	bidiProxy http.Handler
	noBidi    string
}

// New returns the dev listener's handler for cfg, in front of the
// sidecar's contract listener at contractURL (e.g.
// "http://127.0.0.1:8080").
func New(cfg *config.Config, contractURL string, opts Options) http.Handler {
	if opts.Cut == 0 {
		opts.Cut = DefaultCut
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Transport: passthroughTransport()}
	}
	files, err := fs.Sub(playground, "playground")
	if err != nil {
		panic(err) // the embed line names the directory: cannot happen
	}
	transport := client.Transport
	if transport == nil {
		transport = passthroughTransport()
	}
	contract := strings.TrimRight(contractURL, "/")
	bidi, noBidi := newBidi(cfg, opts.Doors, transport)
	return &emulator{cfg: cfg, contract: contract, opts: opts,
		client: client, files: files, methods: methodsJSON(cfg, opts.Doors), doors: doorsJSON(opts.Doors),
		proxy: newPassthrough(contract, transport), bidiProxy: bidi, noBidi: noBidi}
}

// doorInfo is one door of GET /playground/doors.json.
type doorInfo struct {
	Protocol   string `json:"protocol"`
	URL        string `json:"url"`
	Curl       string `json:"curl,omitempty"`
	Client     string `json:"client,omitempty"`
	ClientLang string `json:"client_lang,omitempty"`
	// Mount is where a mounted door is on the contract listener.
	Mount string `json:"mount,omitempty"`
	// Passthrough is a mounted door's path on the dev listener;
	// PassthroughURL its URL there, PassthroughCurl and
	// PassthroughClient how to call it at that URL.
	Passthrough       string `json:"passthrough,omitempty"`
	PassthroughURL    string `json:"passthrough_url,omitempty"`
	PassthroughCurl   string `json:"passthrough_curl,omitempty"`
	PassthroughClient string `json:"passthrough_client,omitempty"`
	// Platform is a mounted door's public URL on Agent Platform, when
	// the platform's variables are set.
	Platform string `json:"platform_url,omitempty"`
}

// doorsJSON lists the enabled doors to the playground, in the order
// given (the program's: agent_platform first).
func doorsJSON(doors []Door) []byte {
	out := struct {
		Doors []doorInfo `json:"doors"`
	}{Doors: []doorInfo{}}
	for _, d := range doors {
		info := doorInfo{Protocol: d.Protocol, URL: d.URL}
		if d.Mount != "" {
			info.Mount, info.Passthrough = d.Mount, PassthroughPath(d.Mount)
			info.PassthroughURL, info.Platform = d.Passthrough, d.Platform
		}
		if d.Example != nil {
			info.Curl, info.Client, info.ClientLang = d.Example.Curl, d.Example.Client, d.Example.ClientLang
		}
		if d.Mount != "" && d.PassthroughExample != nil {
			info.PassthroughCurl, info.PassthroughClient = d.PassthroughExample.Curl, d.PassthroughExample.Client
			info.ClientLang = d.PassthroughExample.ClientLang
		}
		out.Doors = append(out.Doors, info)
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

// methodInfo is one method of GET /playground/methods.json.
type methodInfo struct {
	Name    string `json:"name"`
	APIMode string `json:"api_mode"`
	Example any    `json:"example"`
	// Description is the map's description of the method, which the page
	// shows with it; left out when the map gives none.
	Description string `json:"description,omitempty"`
	// Live are the ways to open a bidi method (api_mode "bidi"), none
	// when no door converses with it; absent for other methods.
	Live []liveInfo `json:"live,omitempty"`
}

// methodsJSON describes the method map to the playground: every class
// method in the map's order ("*" is no method a page can list), a bidi
// method with the conversations of doors that reach it.
func methodsJSON(cfg *config.Config, doors []Door) []byte {
	out := struct {
		Project  string       `json:"project"`
		Location string       `json:"location"`
		Engine   string       `json:"engine"`
		API      string       `json:"api"`
		Preset   string       `json:"preset"`
		ADKApp   string       `json:"adk_app"`
		Methods  []methodInfo `json:"methods"`
	}{Project: "local", Location: "us-central1", Engine: "local", API: "v1",
		Preset: cfg.Preset, ADKApp: cfg.ADK.App, Methods: []methodInfo{}}
	for _, m := range cfg.Methods {
		if m.Name == "*" {
			continue
		}
		info := methodInfo{Name: m.Name, APIMode: string(m.Mode), Example: m.Example, Description: m.Description}
		if m.Mode == config.ModeBidi {
			info.Live = liveOf(doors, m.Name)
		}
		out.Methods = append(out.Methods, info)
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

func (e *emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if !guard(w, r) {
		return
	}
	p := r.URL.Path
	switch {
	case p == "/" || strings.HasPrefix(p, "/playground/"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", r.Method+" is not allowed on "+p+"; use GET")
			return
		}
		e.static(w, r)
		return
	}
	if inner, ws, ok := passthroughPath(r.URL.EscapedPath()); ok {
		// Any verb, any body type: the door behind holds its own rules.
		e.passthrough(w, r, inner, ws)
		return
	}
	if bidiRoute(r.URL.EscapedPath()) {
		e.bidi(w, r)
		return
	}
	verb, ok := restVerb(p)
	if !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "The requested URL "+clip([]byte(p))+" was not found on this server. "+
			"Known: POST /{v1|v1beta1}/projects/{project}/locations/{location}/reasoningEngines/{engine}:query or :streamQuery, "+
			"any verb on /reasoningEngines/{v1|v1beta1}/projects/{project}/locations/{location}/reasoningEngines/{engine}/api/{path}, "+
			"a WebSocket at /reasoningEngines/ws/{v1beta1|v1}/… (the same) and at "+
			"/ws/google.cloud.aiplatform.{v1beta1|v1}.ReasoningEngineExecutionService/BidiQueryReasoningEngine")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", r.Method+" is not allowed on "+p+"; use POST")
		return
	}
	if !jsonBody(w, r) {
		return
	}
	if verb == "query" {
		e.query(w, r)
	} else {
		e.streamQuery(w, r)
	}
}

// restVerb reads "query" or "streamQuery" from a REST path of the
// platform: /{v1|v1beta1}/projects/P/locations/L/reasoningEngines/E:verb.
func restVerb(p string) (string, bool) {
	seg := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(seg) != 7 || (seg[0] != "v1" && seg[0] != "v1beta1") ||
		seg[1] != "projects" || seg[3] != "locations" || seg[5] != "reasoningEngines" ||
		seg[2] == "" || seg[4] == "" {
		return "", false
	}
	engine, verb, ok := strings.Cut(seg[6], ":")
	if !ok || engine == "" || (verb != "query" && verb != "streamQuery") {
		return "", false
	}
	return verb, true
}

// contentTypes are the playground's own types, the same on every machine
// (mime's table also reads the system's).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
}

// static serves the playground: GET / is its index.html, GET
// /playground/<file> the other files, /playground/methods.json the
// method map, /playground/doors.json the enabled doors. Never cached: the
// page changes with the binary.
func (e *emulator) static(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/playground/methods.json":
		h.Set("Content-Type", "application/json")
		w.Write(e.methods)
		return
	case "/playground/doors.json":
		h.Set("Content-Type", "application/json")
		w.Write(e.doors)
		return
	}
	name := "index.html"
	if r.URL.Path != "/" {
		name = strings.TrimPrefix(r.URL.Path, "/playground/")
	}
	b, err := fs.ReadFile(e.files, name)
	if err != nil || !fs.ValidPath(name) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "The requested URL "+r.URL.Path+" was not found on this server.")
		return
	}
	ct := contentTypes[path.Ext(name)]
	if ct == "" {
		ct = mime.TypeByExtension(path.Ext(name))
	}
	if ct == "" {
		ct = http.DetectContentType(b)
	}
	h.Set("Content-Type", ct)
	w.Write(b)
}
