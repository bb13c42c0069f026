// Package doors is the list of the front doors the program can serve:
// one line per door, a door's package registering it with its Protocol
// (its name, config key, default listen address, options decoding and
// validation, which config and the metrics label read from here; its
// Probe, which the shared hostile-input tests call it with) and its New.
// A door is its package plus its line in All: config, proxy and
// cmd/sidecar name no door.
package doors

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/a2a"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/foundry"
	"github.com/sidecar-dev/sidecar/proxy/livedoor"
	"github.com/sidecar-dev/sidecar/proxy/mcp"
	"github.com/sidecar-dev/sidecar/proxy/openai"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// All are the doors, agent_platform first; the others' listeners open in
// this order, and config lists their keys in it.
var All = []Door{
	Register(platform.Protocol, platform.New),
	Register(agentcore.Protocol, agentcore.New),
	Register(foundry.Protocol, foundry.New),
	Register(a2a.Protocol, a2a.New),
	Register(mcp.Protocol, mcp.New),
	Register(openai.Protocol, openai.New),
	Register(livedoor.Protocol, livedoor.New),
}

// Door is one registered door: its config Kind and its constructor.
type Door struct {
	config.Kind
	// New builds the door of cfg's section door (nil for
	// agent_platform).
	New func(cfg *config.Config, door *config.Door, host core.Host) (proxy.Door, error)
	// Probe is how a client calls the door and reads its failures, the
	// Protocol's: what the shared hostile-input tests use.
	Probe core.Probe
	// Path is where the door's endpoint is under its listener, for its
	// section (the Protocol's; nil: the root). URL applies it.
	Path func(door *config.Door) string
	// Example is how a user calls the door at its URL with its section
	// door (the Protocol's; nil: none).
	Example func(base string, door *config.Door) core.Example
	// Commands are the subcommands it brings to the binary (the
	// Protocol's).
	Commands []core.Command
	// DeployCard is the card the platform's create request declares for
	// it (the Protocol's; nil: none).
	DeployCard func(cfg *config.Config, url string) (json.RawMessage, []string, error)
}

// URL is the door's URL for its section door (nil for agent_platform)
// served on listener (its own, or the platform's when it is mounted),
// e.g. http://127.0.0.1:8090/mcp: listener, then its mount, then the
// door's Path. It is the base the door's Example takes.
func (d Door) URL(listener string, door *config.Door) string {
	if door == nil {
		return listener
	}
	url := strings.TrimSuffix(listener, "/")
	if door.Mount != "/" {
		url += door.Mount
	}
	if d.Path != nil {
		if p := d.Path(door); p != "/" || door.Mount == "" {
			url += p
		}
	}
	if url == strings.TrimSuffix(listener, "/") {
		return listener
	}
	return url
}

// Register is the entry of a door whose package declares p and the
// constructor newDoor, the one shape every door's New has.
func Register[O any, D proxy.Door](p core.Protocol[O], newDoor func(*config.Config, O) (D, error)) Door {
	return Door{Kind: p.Kind, Probe: p.Probe, Path: p.Path, Example: p.Example, Commands: p.Commands, DeployCard: p.DeployCard, New: func(cfg *config.Config, door *config.Door, host core.Host) (proxy.Door, error) {
		d, err := newDoor(cfg, p.Options(door, host))
		if err != nil {
			return nil, fmt.Errorf("protocols.%s: %w", p.Name, err)
		}
		return d, nil
	}}
}

// Commands are the subcommands list's doors bring, in its order.
func Commands(list []Door) []core.Command {
	var l []core.Command
	for _, d := range list {
		l = append(l, d.Commands...)
	}
	return l
}

// Kinds are the Kinds config decodes of list (All, or a test's), every
// door's but agent_platform's, whose section config knows itself: pass
// them to config.Parse and config.Load.
func Kinds(list []Door) []config.Kind {
	var kinds []config.Kind
	for _, d := range list {
		if d.Name != config.ProtocolAgentPlatform {
			kinds = append(kinds, d.Kind)
		}
	}
	return kinds
}

// Names are list's protocols, the protocol label's values besides
// "other" (proxy.Server.Protocols, metrics.New).
func Names(list []Door) []string {
	names := make([]string, len(list))
	for i, d := range list {
		names[i] = d.Name
	}
	return names
}

// Build is the door of cfg's enabled protocol name (one of
// cfg.Listens()) in list.
func Build(list []Door, cfg *config.Config, name string, host core.Host) (proxy.Door, error) {
	for _, d := range list {
		if d.Name == name {
			return d.New(cfg, cfg.Protocols.Door(name), host)
		}
	}
	return nil, fmt.Errorf("unknown protocol %q", name)
}

// DeployCard is the card deploy-request --a2a declares: the one list's
// door that declares a card builds it for cfg, advertising url when not
// "" (core.Protocol.DeployCard), with its advice.
func DeployCard(list []Door, cfg *config.Config, url string) (json.RawMessage, []string, error) {
	for _, d := range list {
		if d.DeployCard != nil {
			return d.DeployCard(cfg, url)
		}
	}
	return nil, nil, fmt.Errorf("no door declares an agent card")
}
