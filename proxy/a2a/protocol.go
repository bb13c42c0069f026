package a2a

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its calls' log lines and label of their metrics.
const Name = "a2a"

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  a2a: {listen: ":9000", method: stream_query, card: {name: …, description: …, input_modes: […], output_modes: […]}, url: https://…/}
//
// listen defaults to ":9000"; method is required; card and url are
// optional (Options).
var Protocol = core.Protocol[Options]{
	Kind: config.Kind{
		Name:   Name,
		Listen: ":9000",
		Decode: decodeSection,
		// JSON-RPC at "/": it cannot share "/" with the platform's probe.
		Routes: func(*config.Door) []string { return []string{RouteRPC, RouteCard, RouteLegacyCard} },
		Check: func(d config.Decoder, c *config.Config, door *config.Door) {
			d.CheckTarget(c, door, &config.Target{Method: door.Options.(*Options).Method})
		},
		Print: func(door *config.Door) *yaml.Node {
			o := door.Options.(*Options)
			card := []any{"name", config.Quoted(o.Card.Name), "description", config.Quoted(o.Card.Description)}
			if o.Card.InputModes != nil {
				card = append(card, "input_modes", config.Strings(o.Card.InputModes))
			}
			if o.Card.OutputModes != nil {
				card = append(card, "output_modes", config.Strings(o.Card.OutputModes))
			}
			kv := []any{"card", config.Mapping(card...)}
			if o.URL != "" {
				kv = append(kv, "url", config.Quoted(o.URL))
			}
			return config.PrintTarget(door, &config.Target{Method: o.Method}, kv...)
		},
	},
	Options: func(door *config.Door, host core.Host) Options {
		o := *door.Options.(*Options)
		o.Mount = door.Mount
		o.Store = host.Store
		o.Public = host.Public(door.Mount != "")
		o.onPlatform(host.Getenv)
		return o
	},
	Probe:      probe,
	Example:    example,
	Commands:   []core.Command{cardCommand},
	DeployCard: deployCard,
}

// Options are what the door serves besides the method map.
type Options struct {
	// Method is the method of the map every message calls.
	Method string
	// Card is what the agent card says about the agent.
	Card CardInfo
	// URL is the public URL the card advertises for the JSON-RPC
	// endpoint (protocols.a2a.url). Empty: for a mounted door on Agent
	// Platform, the platform's public passthrough URL of the mount
	// (onPlatform); else the scheme and host the card was asked on
	// (Public: X-Forwarded-Proto and X-Forwarded-Host when a trusted proxy
	// sets them, else http, or https with TLS, and the Host), plus the
	// endpoint's path.
	URL string
	// Public is how the door learns the address the card was asked on
	// when URL is empty (Host.Public: trusted_proxies, the platform).
	Public core.Public
	// Mount is where the door is mounted on the platform's listener
	// (config.Door.Mount): its JSON-RPC endpoint's path there, "" on a
	// listener of its own.
	Mount string
	// Store is where tasks are kept for every replica (state.store:
	// redis); nil: in the process only.
	Store *state.Redis
}

// CardInfo is the agent card's description of the agent.
type CardInfo struct {
	Name, Description string
	// InputModes and OutputModes are the media types the card says the
	// agent takes and gives (its defaultInputModes and
	// defaultOutputModes, and its skill's); nil: the defaults.
	InputModes, OutputModes []string
}

// The modes a card advertises when card: names none: text in; text and
// JSON data out.
var (
	defaultInputModes  = []string{"text/plain"}
	defaultOutputModes = []string{"text/plain", "application/json"}
)

func (c CardInfo) inputModes() []string {
	if c.InputModes == nil {
		return defaultInputModes
	}
	return c.InputModes
}

func (c CardInfo) outputModes() []string {
	if c.OutputModes == nil {
		return defaultOutputModes
	}
	return c.OutputModes
}

// decodeSection decodes the section: listen, method, card and url.
func decodeSection(d config.Decoder, n *yaml.Node, path string, door *config.Door) bool {
	o := &Options{}
	door.Options = o
	var t config.Target
	on := d.Target(n, path, door, &t,
		config.Field{Key: "card", Decode: func(d config.Decoder, e config.Entry, path string) { decodeCard(d, e.Value, path, &o.Card) }},
		config.Field{Key: "url", Decode: func(d config.Decoder, e config.Entry, path string) {
			if s, ok := d.URL(e, path); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.Addf(e.Value.Line, path, "%q is not an absolute http or https URL (want e.g. https://agents.example.com/price/)", s)
					return
				}
				o.URL = s
			}
		}})
	o.Method = t.Method
	return on
}

// decodeCard decodes the agent card's name, description and modes.
func decodeCard(d config.Decoder, n *yaml.Node, path string, c *CardInfo) {
	if !d.Mapping(n, path, "a mapping with name, description, input_modes and output_modes") {
		return
	}
	for _, e := range d.Entries(n, path) {
		key := path + "." + e.Name
		switch e.Name {
		case "name", "description":
			s, ok := d.Scalar(e, key)
			if ok && e.Name == "name" {
				c.Name = s
			} else if ok {
				c.Description = s
			}
		case "input_modes":
			c.InputModes = decodeModes(d, e, key)
		case "output_modes":
			c.OutputModes = decodeModes(d, e, key)
		default:
			d.Unknown(e, path, "name", "description", "input_modes", "output_modes")
		}
	}
}

// decodeModes decodes a list of media types (image/png, image/*, */*),
// each without parameters; nil, with the problem reported, for anything
// else, and for an empty list.
func decodeModes(d config.Decoder, e config.Entry, path string) []string {
	list, ok := d.Strings(e, path, "media types")
	if !ok {
		return nil
	}
	if len(list) == 0 {
		d.Addf(e.Value.Line, path, "an empty list: a card names at least one media type (or leave the key out for the default)")
		return nil
	}
	for _, m := range list {
		if !mediaRange(m) {
			d.Addf(e.Value.Line, path, "%q is not a media type such as text/plain, image/png or image/* (no parameters)", m)
			return nil
		}
	}
	return list
}

// mediaRange reports whether s is a media type or range as RFC 9110 §8.3
// writes one, type/subtype, either a token or * (*/* only whole), with no
// parameters.
func mediaRange(s string) bool {
	typ, sub, ok := strings.Cut(s, "/")
	if !ok || !token(typ) || !token(sub) {
		return false
	}
	return typ != "*" || sub == "*"
}

// token reports whether s is an RFC 9110 token, or "*".
func token(s string) bool {
	if s == "*" {
		return true
	}
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 0x80 || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}*", r) {
			return false
		}
	}
	return true
}
