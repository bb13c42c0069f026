package core

import (
	"encoding/json"
	"flag"
	"io"
	"net/netip"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/state"
)

// Protocol is a door's registration, O its Options: the door's package
// declares it, and the program's list of doors (proxy/doors) names it
// beside the door's New. Its Kind is what config knows of the door (its
// name: the protocols key, the log field and metrics label; its default
// listen address; how its section is decoded, checked and printed).
type Protocol[O any] struct {
	config.Kind
	// Options are the options of the door of section door (nil for
	// agent_platform, whose section config decodes itself), what its
	// Kind decoded with what the program gives.
	Options func(door *config.Door, host Host) O
	// Probe is how a client calls the door and reads its failures: what
	// the shared hostile-input tests use (TestHostileDoors fails for a
	// registered door without one).
	Probe Probe
	// Path is where the door's endpoint is under its listener, as its
	// section door sets it (MCP's protocols.mcp.path): the end of the
	// door's URL. Nil: the listener's root, the door's routes fixed.
	Path func(door *config.Door) string
	// Example is how a user calls the door from a shell and from its
	// ecosystem's own SDK, for base (the door's URL: its listener's, or
	// the platform's and its mount, then its Path, e.g.
	// http://localhost:9000, http://localhost:8090/mcp or
	// http://localhost:8080/a2a)
	// and its section door as the map writes it (nil for agent_platform;
	// the OpenAI door's api_key names the variable its examples read):
	// what sidecar dev's playground shows for every enabled door. Nil:
	// the door shows none.
	Example func(base string, door *config.Door) Example
	// DeployCard, for a door Agent Platform's create request can declare
	// (A2A's agent card, `sidecar deploy-request --a2a`), is that card
	// for cfg, advertising url when not "", and the advice for it; an
	// error when cfg's door cannot be declared. Nil: none.
	DeployCard func(cfg *config.Config, url string) (card json.RawMessage, warnings []string, err error)
	// Live lists the conversations the door serves for its section door
	// in cfg (nil: none): where sidecar dev's playground opens them, and
	// where its public bidi endpoint sends a conversation in the
	// platform's framing.
	Live func(cfg *config.Config, door *config.Door) []Conversation
	// Commands are the subcommands of the sidecar binary the door brings
	// (A2A's `sidecar a2a-card`): the program lists and runs them as it
	// finds them here, naming no door. Nil: none.
	Commands []Command
}

// Command is a subcommand a door brings to the sidecar binary, run on
// the loaded method map: `sidecar NAME --config F [its flags]`.
type Command struct {
	// Name is the subcommand, e.g. "a2a-card".
	Name string
	// Args are its flags as the help's usage line shows them after its
	// name, e.g. "[flags] [--url URL]".
	Args string
	// Help is what it does, one or more lines of the help text.
	Help []string
	// Doc is the page that documents it, e.g. "docs/a2a.md".
	Doc string
	// Flags registers its own flags on fs (the program's --config is
	// there already) and returns what runs it once they are parsed: on
	// the loaded config, with the program's environment (getenv: on
	// Agent Platform, the variables it injects), its output to stdout. An
	// error it returns is the command's failure, exit status 1.
	Flags func(fs *flag.FlagSet) func(cfg *config.Config, getenv func(string) string, stdout io.Writer) error
}

// Conversation is a WebSocket endpoint where a door converses with bidi
// methods of the map.
type Conversation struct {
	// Path is where it is under the door's URL: "/ws", or "/" for the
	// URL itself.
	Path string
	// Methods are the bidi methods it reaches, the one a conversation
	// that names none goes to first.
	Methods []string
	// Platform is whether its callers speak Agent Platform's bidi
	// framing: a setup frame naming the method (and its first input),
	// then {"bidi_stream_input": …} frames, answered by
	// {"bidiStreamOutput": …} frames. False: frames go as they are.
	Platform bool
}

// Example is a copy-paste call of a door: a curl command and a client
// snippet in the ecosystem's SDK, ClientLang naming its language (e.g.
// "python", "typescript").
type Example struct {
	Curl, Client, ClientLang string
}

// Host is what the program gives every door it builds, besides the
// config.
type Host struct {
	// InFlight is the number of calls being served on every door
	// (proxy.Server.InFlight).
	InFlight func() int64
	// Getenv is the value of an environment variable, "" when unset.
	Getenv func(name string) string
	// Version is the sidecar's version (the binary's, stamped at build
	// time), what a door that names its server says; "" when unknown.
	Version string
	// Store is the shared state's store with state.store: redis, where
	// a stateful door (A2A's tasks, MCP's sessions) keeps what every
	// replica must see; nil with the memory store.
	Store *state.Redis
	// Proxies are the peers whose X-Forwarded-* headers a door believes
	// (trusted_proxies, Public).
	Proxies []netip.Prefix
}
