package devapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/hostcheck"
)

// The platform's public bidi endpoint (PROTOCOLS.md F4), as Agent
// Platform's Python SDK (client.aio.live.agent_engines.connect) dials it:
//
//	/ws/google.cloud.aiplatform.{v1beta1|v1}.ReasoningEngineExecutionService/BidiQueryReasoningEngine
//
// then sends a setup frame naming the engine, the class_method and its
// first input, then {"bidi_stream_input": …} frames, and reads
// {"bidiStreamOutput": …} frames. The platform routes the conversation to
// the engine the setup names; the dev listener has one engine, and relays
// the conversation to the first door that converses in that framing (the
// live door), as bytes both ways: the door reads the setup, so the frames
// on the endpoint are the door's.

// Live is a conversation of a door (core.Conversation) where sidecar dev
// reaches it.
type Live struct {
	core.Conversation
	// URL is its URL on its listener, http://127.0.0.1:8080/live (a
	// WebSocket client opens it as ws://…): where the dev listener's bidi
	// endpoint relays, for a conversation in the platform's framing.
	URL string
	// Passthrough is its path on the dev listener's WebSocket
	// passthrough (WSPassthroughPath of its path on the contract
	// listener), for a door mounted there: what the playground opens. ""
	// for a door on a listener of its own, which the playground's page,
	// another origin, cannot open.
	Passthrough string
}

// bidiRoute reports whether p, an escaped path, is the public bidi
// endpoint's, for either version of the API.
func bidiRoute(p string) bool {
	rest, ok := strings.CutPrefix(p, "/ws/google.cloud.aiplatform.")
	if !ok {
		return false
	}
	version, rest, _ := strings.Cut(rest, ".")
	return (version == "v1" || version == "v1beta1") && rest == "ReasoningEngineExecutionService/BidiQueryReasoningEngine"
}

// newBidi is the bidi endpoint's relay through transport to the first of
// doors' conversations in the platform's framing; without one, nil and
// the message that refuses it, saying what sidecar.yaml needs.
func newBidi(cfg *config.Config, doors []Door, transport http.RoundTripper) (http.Handler, string) {
	var others []string
	for _, d := range doors {
		for _, c := range d.Live {
			if c.Platform {
				return newProxy(c.URL, transport, func(*http.Request) (string, string) { return targetPath(c.URL), "" }), ""
			}
			where := c.URL
			if d.Mount != "" {
				where = joinPath(d.Mount, c.Path)
			}
			others = append(others, fmt.Sprintf("%s (%s)", d.Protocol, where))
		}
	}
	method, example := "NAME", " (NAME a method with mode: bidi, e.g. talk: {mode: bidi, call: GET /live})"
	for _, m := range cfg.Methods {
		if m.Mode == config.ModeBidi {
			method, example = m.Name, ""
			break
		}
	}
	msg := "No door of sidecar.yaml converses in the platform's bidi framing, which this endpoint's callers speak " +
		"(a setup frame, then bidi_stream_input frames): add the live door, e.g. protocols: {live: {mount: /live, method: " +
		method + "}}" + example
	if len(others) > 0 {
		msg += "; " + strings.Join(others, ", ") + " relays frames as they are (a live door with framing: raw, or AgentCore's /ws): " +
			"the platform's framing is the live door's default"
	}
	return nil, msg
}

// targetPath is the escaped path of url ("/" for none).
func targetPath(url string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"), "/")
	return "/" + rest
}

// joinPath is the path p under base, both paths: base itself for "/".
func joinPath(base, p string) string {
	if p == "/" {
		return base
	}
	return strings.TrimSuffix(base, "/") + p
}

// bidi serves the public bidi endpoint: an upgrade relayed to the
// platform-framed conversation, or refused 501 when the config has none.
func (e *emulator) bidi(w http.ResponseWriter, r *http.Request) {
	if !hostcheck.Upgrade(r) {
		notWebSocket(w, r)
		return
	}
	if e.bidiProxy == nil {
		writeError(w, http.StatusNotImplemented, "UNIMPLEMENTED", e.noBidi)
		return
	}
	e.bidiProxy.ServeHTTP(w, r)
}

// liveInfo is one way to open a bidi method of GET
// /playground/methods.json.
type liveInfo struct {
	// Protocol is the door's; Framing "platform" or "raw".
	Protocol string `json:"protocol"`
	Framing  string `json:"framing"`
	// Path is its path on the dev listener's WebSocket passthrough, for a
	// door mounted on the contract listener: what the page opens. URL is
	// its ws:// URL on its own listener.
	Path string `json:"path,omitempty"`
	URL  string `json:"url"`
}

// liveOf are the conversations of doors that reach the bidi method name.
func liveOf(doors []Door, name string) []liveInfo {
	list := []liveInfo{}
	for _, d := range doors {
		for _, c := range d.Live {
			for _, m := range c.Methods {
				if m != name {
					continue
				}
				framing := "raw"
				if c.Platform {
					framing = "platform"
				}
				list = append(list, liveInfo{Protocol: d.Protocol, Framing: framing, Path: c.Passthrough,
					URL: "ws" + strings.TrimPrefix(c.URL, "http")})
			}
		}
	}
	return list
}
