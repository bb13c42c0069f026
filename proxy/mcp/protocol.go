package mcp

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
)

// Name is the door's protocol: its key in the protocols section, the
// protocol field of its calls' log lines and label of their metrics.
const Name = "mcp"

// DefaultPath is the MCP endpoint's path when the section names none: the
// one MCP hosts are told by convention.
const DefaultPath = "/mcp"

// Protocol is the door's registration (proxy/doors lists it):
//
//	protocols:
//	  mcp: {listen: ":8090", path: /mcp, methods: [query, stream_query]}
//
// listen defaults to ":8090", path to /mcp, methods to every method of the
// map (Options).
var Protocol = core.Protocol[Options]{
	Kind: config.Kind{
		Name:   Name,
		Listen: ":8090",
		Decode: decodeSection,
		Routes: func(door *config.Door) []string { return []string{door.Options.(*Options).Path} },
		// Protected and mounted, its metadata at RFC 9728's path too, where
		// clients that find no resource_metadata in a challenge look; and
		// at the root's when the audience is the origin (that resource's
		// path), where the Go MCP SDK looks for it.
		WellKnown: func(c *config.Config, door *config.Door) []string {
			if !c.Auth.Protects(Name) {
				return nil
			}
			paths := []string{metadataPath(door.Mount)}
			if isOrigin(c.Auth.Audience) && paths[0] != RouteResourceMetadata {
				paths = append(paths, RouteResourceMetadata)
			}
			return paths
		},
		Check: func(d config.Decoder, c *config.Config, door *config.Door) {
			d.CheckMethods(c, door.Line, "protocols.mcp.methods", door.Options.(*Options).Methods)
		},
		Print: func(door *config.Door) *yaml.Node {
			o := door.Options.(*Options)
			kv := []any{"listen", config.Quoted(door.Listen)}
			if door.Mount == "" { // mounted, the endpoint is the mount
				kv = append(kv, "path", config.Quoted(o.Path))
			}
			if o.Methods != nil {
				kv = append(kv, "methods", config.Strings(o.Methods))
			}
			return config.Mapping(kv...)
		},
	},
	Options: func(door *config.Door, host core.Host) Options {
		o := *door.Options.(*Options)
		o.Version = host.Version
		o.Store = host.Store
		o.Mount = door.Mount
		o.Public = host.Public(door.Mount != "")
		return o
	},
	Probe:   probe,
	Path:    func(door *config.Door) string { return door.Options.(*Options).Path },
	Example: example,
}

// Options are what the door serves besides the method map.
type Options struct {
	// Path is the MCP endpoint's path. Default: DefaultPath.
	Path string
	// Methods are the methods of the map served as tools, in this order;
	// nil: every method the map lists (not "*").
	Methods []string
	// Version is the server's version in serverInfo: the sidecar's, as
	// the program knows it (core.Host.Version). Default: the module's
	// version from the build info, else "dev".
	Version string
	// Store is where the 2025 revisions' sessions are kept for every
	// replica (state.store: redis); nil: in the process only.
	Store *state.Redis
	// Mount is where the door is mounted on the platform's listener
	// (config.Door.Mount), "" on a listener of its own: the URL of its
	// protected resource metadata is under it.
	Mount string
	// Public is how the door learns the public URL its protected resource
	// metadata is named at (Host.Public, as the A2A card's).
	Public core.Public
}

// decodeSection decodes the section: listen, path and methods.
func decodeSection(d config.Decoder, n *yaml.Node, path string, door *config.Door) bool {
	o := &Options{Path: DefaultPath}
	if door.Mount != "" {
		o.Path = "/" // the endpoint is the mount itself
	}
	door.Options = o
	if !d.Mapping(n, path, "a mapping with listen, path and methods") {
		return n.ShortTag() == "!!null" // mcp: with nothing is on, every key its default
	}
	ok := true
	for _, e := range d.Entries(n, path) {
		key := path + "." + e.Name
		switch e.Name {
		case "listen":
			d.Listen(e, key, door)
		case "path":
			if door.Mount != "" {
				d.Addf(e.Key.Line, key, "a mounted door's endpoint is its mount (%q, line %d): want no path, or the endpoint's path as mount", door.Mount, door.MountLine)
				ok = false
				continue
			}
			if s, set := d.Scalar(e, key); set {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?# ") {
					d.Addf(e.Value.Line, key, "%q is not a path (want one starting with /, e.g. /mcp)", s)
					ok = false
					continue
				}
				o.Path = s
			}
		case "methods":
			list, set := d.Strings(e, key, "method names")
			if set && len(list) == 0 {
				d.Addf(e.Value.Line, key, "empty list (want the methods served as tools, or no methods key for every method of the map)")
				ok = false
				continue
			}
			if !set && e.Value.Kind == yaml.SequenceNode {
				ok = false
				continue
			}
			o.Methods = list
		default:
			d.Unknown(e, path, "listen", "path", "methods")
		}
	}
	return ok
}

// example is a call of the door at url, its endpoint's (the listener's
// and the section's path): a curl tools/list of the 2026-07-28 revision,
// and a tools/call with the TypeScript SDK.
func example(url string, _ *config.Door) core.Example {
	return core.Example{
		Curl: fmt.Sprintf(`curl -sS %s \
  -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'`, url),
		ClientLang: "typescript",
		Client: fmt.Sprintf(`import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const client = new Client({ name: "example", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
await client.connect(new StreamableHTTPClientTransport(new URL(%q)));
const { tools } = await client.listTools();
const result = await client.callTool({ name: tools[0].name, arguments: { message: "hi" } },
  { onprogress: (p) => console.log(p.message) });
console.log(result.content[0].text);
await client.close();`, url),
	}
}
