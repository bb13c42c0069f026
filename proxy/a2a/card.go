package a2a

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// cardCommand is `sidecar a2a-card`: the card the door of the config
// serves, on stdout.
var cardCommand = core.Command{
	Name: "a2a-card",
	Args: "[flags] [--url URL]",
	Help: []string{"print the A2A agent card protocols.a2a serves", "(--url: the public URL it advertises)"},
	Doc:  "docs/a2a.md",
	Flags: func(fs *flag.FlagSet) func(*config.Config, func(string) string, io.Writer) error {
		url := fs.String("url", "", "")
		return func(cfg *config.Config, getenv func(string) string, stdout io.Writer) error {
			card, err := CardOf(cfg, *url, getenv)
			if err != nil {
				return err
			}
			_, err = stdout.Write(card)
			return err
		}
	},
}

// CardOf is the agent card the A2A door of cfg serves (sidecar a2a-card),
// advertising url: by default protocols.a2a.url, else, for a mounted
// door where getenv gives Agent Platform's variables, the platform's
// public URL of the mount (Options.onPlatform), else http://localhost
// and the port of the door's listener, as a local client reaches it.
func CardOf(cfg *config.Config, url string, getenv func(string) string) ([]byte, error) {
	door := cfg.Protocols.Door(Name)
	if door == nil {
		return nil, fmt.Errorf("the config has no protocols.a2a")
	}
	// What Protocol.Options gives, which CardOf cannot call: Protocol
	// lists cardCommand, which calls CardOf.
	opts := *door.Options.(*Options)
	opts.Mount = door.Mount
	opts.onPlatform(getenv)

	if url == "" {
		url = opts.URL
	}
	if url == "" {
		listen, key := door.Listen, "protocols.a2a.listen"
		if door.Mount != "" {
			listen, key = cfg.Listen, "listen"
		}
		_, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %v", key, listen, err)
		}
		url = "http://localhost:" + port + opts.rpcPath()
	}
	d, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return d.Card(url), nil
}

// cardVersion is the card's version of the agent, which the map does not
// say.
const cardVersion = "1.0.0"

// agentInterface is an interface of the card's 1.0 supportedInterfaces.
type agentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// legacyInterface is an interface of the card's 0.3 additionalInterfaces.
type legacyInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// supportedInterfaces are the interfaces the door serves at url, as 1.0's
// card lists them: JSON-RPC first (a client that picks the first binding
// it speaks, as @a2a-js/sdk does, keeps the JSON-RPC it used before the
// HTTP+JSON binding was served), each binding in 1.0 and in 0.3 (the one
// Gemini Enterprise registers). Both bindings share url: JSON-RPC at it,
// HTTP+JSON's routes under it (url + "/message:send", …).
func supportedInterfaces(url string) []agentInterface {
	return []agentInterface{
		{url, "JSONRPC", "1.0"}, {url, "JSONRPC", "0.3"},
		{url, "HTTP+JSON", "1.0"}, {url, "HTTP+JSON", "0.3"},
	}
}

// legacyInterfaces are the same as 0.3's card lists them (its url and
// preferredTransport are JSON-RPC's).
func legacyInterfaces(url string) []legacyInterface {
	return []legacyInterface{{url, "JSONRPC"}, {url, "HTTP+JSON"}}
}

type skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	InputModes  []string `json:"inputModes"`
	OutputModes []string `json:"outputModes"`
}

// card is the agent card in both versions' fields at once: A2A 0.3's
// url, protocolVersion, preferredTransport and additionalInterfaces, and
// 1.0's supportedInterfaces (each version ignores the other's fields; a
// 1.0 client takes a card with supportedInterfaces for a 1.0 card, and
// picks the 1.0 interface from it; a 0.3 client reads url and
// preferredTransport).
type card struct {
	Name                 string            `json:"name"`
	Description          string            `json:"description"`
	URL                  string            `json:"url"`
	Version              string            `json:"version"`
	ProtocolVersion      string            `json:"protocolVersion"`
	PreferredTransport   string            `json:"preferredTransport"`
	AdditionalInterfaces []legacyInterface `json:"additionalInterfaces"`
	SupportedInterfaces  []agentInterface  `json:"supportedInterfaces"`
	Capabilities         struct {
		Streaming         bool `json:"streaming"`
		PushNotifications bool `json:"pushNotifications"`
	} `json:"capabilities"`
	DefaultInputModes  []string `json:"defaultInputModes"`
	DefaultOutputModes []string `json:"defaultOutputModes"`
	Skills             []skill  `json:"skills"`
	// With an auth section protecting the door: how to call it, in both
	// versions at once (securitySchemes' values carry 0.3's OpenAPI
	// fields and 1.0's oneof member; security is 0.3's requirement,
	// securityRequirements 1.0's).
	SecuritySchemes      map[string]securityScheme `json:"securitySchemes,omitempty"`
	Security             []map[string][]string     `json:"security,omitempty"`
	SecurityRequirements []securityRequirement     `json:"securityRequirements,omitempty"`
}

// securityScheme is a card's scheme as 0.3 (OpenAPI's type, scheme,
// bearerFormat, openIdConnectUrl) and 1.0 (the oneof member) write it.
type securityScheme struct {
	Type             string        `json:"type"`
	Description      string        `json:"description,omitempty"`
	Scheme           string        `json:"scheme,omitempty"`
	BearerFormat     string        `json:"bearerFormat,omitempty"`
	OpenIDConnectURL string        `json:"openIdConnectUrl,omitempty"`
	HTTPAuth         *httpAuth     `json:"httpAuthSecurityScheme,omitempty"`
	OpenIDConnect    *openIDScheme `json:"openIdConnectSecurityScheme,omitempty"`
}

type httpAuth struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

type openIDScheme struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

// securityRequirement is 1.0's: the schemes a call needs, each with its
// scopes.
type securityRequirement struct {
	Schemes map[string]struct {
		List []string `json:"list"`
	} `json:"schemes"`
}

// security is the card's schemes and requirement for a door that checks
// the tokens of issuer for audience: a JWT bearer token (the
// requirement), and the issuer's OpenID Connect discovery, where a client
// finds how to get one.
func security(issuer, audience string) (map[string]securityScheme, []map[string][]string, []securityRequirement) {
	desc := "A JWT access token of " + issuer + " for " + audience + ", as Authorization: Bearer <token>."
	discovery := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration" // OpenID Connect Discovery §4
	schemes := map[string]securityScheme{
		"bearer": {Type: "http", Scheme: "bearer", BearerFormat: "JWT", Description: desc,
			HTTPAuth: &httpAuth{Scheme: "Bearer", BearerFormat: "JWT", Description: desc}},
		"oidc": {Type: "openIdConnect", OpenIDConnectURL: discovery, Description: "Where to get the token.",
			OpenIDConnect: &openIDScheme{OpenIDConnectURL: discovery, Description: "Where to get the token."}},
	}
	req := securityRequirement{Schemes: map[string]struct {
		List []string `json:"list"`
	}{"bearer": {List: []string{}}}}
	return schemes, []map[string][]string{{"bearer": {}}}, []securityRequirement{req}
}

// Card is the agent card the door serves, its JSON-RPC endpoint at url.
func (d *Door) Card(url string) []byte {
	in, out := d.opts.Card.inputModes(), d.opts.Card.outputModes()
	desc := d.opts.Card.Description
	if desc == "" {
		desc = "An agent served by sidecar: each message calls its method " + d.opts.Method + "."
	}
	name := d.opts.Card.Name
	if name == "" {
		name = d.opts.Method
	}
	c := card{
		Name: name, Description: desc, URL: url, Version: cardVersion,
		ProtocolVersion: "0.3.0", PreferredTransport: "JSONRPC",
		AdditionalInterfaces: legacyInterfaces(url),
		SupportedInterfaces:  supportedInterfaces(url),
		DefaultInputModes:    in, DefaultOutputModes: out,
		Skills: []skill{{ID: d.opts.Method, Name: d.opts.Method, Description: desc, Tags: []string{"sidecar"}, InputModes: in, OutputModes: out}},
	}
	c.Capabilities.Streaming = d.stream
	if d.auth.Issuer != "" {
		c.SecuritySchemes, c.Security, c.SecurityRequirements = security(d.auth.Issuer, d.auth.Audience)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a description's "<" stays as written
	enc.SetIndent("", "  ")
	enc.Encode(c)
	return b.Bytes()
}

// serveCard answers the card, with or without an A2A-Version header. Its
// url is Options.URL, else the address the card was asked on (Options.Public).
func (d *Door) serveCard(w http.ResponseWriter, r *http.Request) {
	url := d.opts.URL
	if url == "" {
		url = d.opts.Public.Base(r) + d.opts.rpcPath()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(d.Card(url))
}

// rpcPath is the JSON-RPC endpoint's path on the listener: the mount
// when the door is mounted, else RouteRPC.
func (o *Options) rpcPath() string {
	if o.Mount == "" || o.Mount == "/" {
		return RouteRPC
	}
	return o.Mount
}

// onPlatform sets URL, when none is configured and the door is mounted on
// the platform's listener, to the mount's public URL on Agent Platform
// (core.PlatformBase, from the variables the platform injects, read with
// getenv): there a request reaches the container through the platform's
// passthrough, with a Host that is the container's, not the one its
// clients call. Off the platform, or with a variable that is not a plain
// token (which the program warns of once, core.PlatformBase's error), the
// card keeps the address it was asked on.
func (o *Options) onPlatform(getenv func(string) string) {
	if o.URL != "" || o.Mount == "" {
		return
	}
	if base, _ := core.PlatformBase(getenv); base != "" {
		o.URL = base + o.rpcPath()
	}
}
