package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Expanded is the method map as the sidecar runs it, in YAML: every
// default filled in and every preset method written out, so that it could
// be used as a config file itself. `sidecar validate --print` prints it.
func (c *Config) Expanded() []byte {
	root := mapping(
		"listen", scalar(c.Listen),
		"upstream", c.upstreamNode(),
		"timeouts", timeoutsNode(c.Timeouts),
		"limits", mapping(
			"request_bytes", value(c.Limits.RequestBytes),
			"record_bytes", value(c.Limits.RecordBytes),
			"reply_bytes", value(c.Limits.ReplyBytes),
			"header_bytes", value(c.Limits.HeaderBytes),
			"header_timeout", scalar(c.Limits.HeaderTimeout.String()),
			"concurrency", value(c.Limits.Concurrency),
			"queue", value(c.Limits.Queue),
			"queue_timeout", scalar(c.Limits.QueueTimeout.String()),
			"body_timeout", scalar(c.Limits.BodyTimeout.String())),
		"shutdown", mapping(
			"drain", scalar(c.Shutdown.Drain.String()),
			"agent_grace", scalar(c.Shutdown.AgentGrace.String())),
	)
	if len(c.Headers.Forward) > 0 || len(c.Headers.SetTemplates) > 0 {
		h := mapping()
		if len(c.Headers.Forward) > 0 {
			fwd := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, name := range c.Headers.Forward {
				fwd.Content = append(fwd.Content, scalar(name))
			}
			h.Content = append(h.Content, scalar("forward"), fwd)
		}
		if len(c.Headers.SetTemplates) > 0 {
			set := mapping()
			for _, name := range slices.Sorted(maps.Keys(c.Headers.SetTemplates)) {
				// The value as written: a ${NAME} secret stays a reference.
				set.Content = append(set.Content, scalar(name), quoted(c.Headers.SetTemplates[name]))
			}
			h.Content = append(h.Content, scalar("set"), set)
		}
		root.Content = append(root.Content, scalar("headers"), h)
	}
	if c.Admin.Listen != "" {
		root.Content = append(root.Content, scalar("admin"), mapping("listen", scalar(c.Admin.Listen)))
	}
	if c.ADK.App != "" {
		root.Content = append(root.Content, scalar("adk"), mapping("app", scalar(c.ADK.App), "keys", scalar(c.ADK.Keys)))
	}
	if ps := c.Protocols; !ps.AgentPlatform || len(ps.Doors) > 0 {
		root.Content = append(root.Content, scalar("protocols"), c.protocolsNode())
	}
	if c.KeepAlive.Path != "" {
		root.Content = append(root.Content, scalar("keep_alive_probe"), mapping("path", scalar(c.KeepAlive.Path), "max_seconds", value(c.KeepAlive.MaxSeconds)))
	}
	if c.State.Store == StoreRedis {
		// The URL as written: a ${NAME} secret stays a reference.
		root.Content = append(root.Content, scalar("state"), mapping("store", scalar(c.State.Store),
			"redis", mapping("url", quoted(c.State.Redis.URL), "key_prefix", scalar(c.State.Redis.KeyPrefix),
				"task_ttl", scalar(c.State.Redis.TaskTTL.String()), "lease", scalar(c.State.Redis.Lease.String()))))
	}
	if c.Auth.Line > 0 {
		a := []any{"issuer", quoted(c.Auth.Issuer)}
		if c.Auth.JWKSURL != "" {
			a = append(a, "jwks_url", quoted(c.Auth.JWKSURL))
		}
		a = append(a, "audience", quoted(c.Auth.Audience), "doors", Strings(c.Auth.Doors))
		if len(c.Auth.Headers) > 0 {
			var h []any
			for _, claim := range AuthClaims {
				if name, ok := c.Auth.Headers[claim]; ok {
					h = append(h, claim, scalar(name))
				}
			}
			a = append(a, "headers", mapping(h...))
		}
		root.Content = append(root.Content, scalar("auth"), mapping(a...))
	}
	if len(c.TrustedHosts) > 0 {
		root.Content = append(root.Content, scalar("trusted_hosts"), Strings(c.TrustedHosts))
	}
	if len(c.TrustedProxies) > 0 {
		var l []string
		for _, pre := range c.TrustedProxies {
			l = append(l, pre.String())
		}
		root.Content = append(root.Content, scalar("trusted_proxies"), Strings(l))
	}
	methods := mapping()
	bidi := false
	for _, m := range c.Methods {
		methods.Content = append(methods.Content, scalar(m.Name), methodNode(m))
		bidi = bidi || m.Mode == ModeBidi
	}
	if bidi { // limits.live applies to conversations only
		l := c.Limits.Live
		live := mapping(
			"frame_bytes", value(l.FrameBytes),
			"queue_frames", value(l.QueueFrames),
			"queue_bytes", value(l.QueueBytes),
			"connections", value(l.Connections),
			"idle", scalar(l.Idle.String()),
			"max_duration", scalar(l.MaxDuration.String()))
		live.Style = yaml.FlowStyle
		limits := root.Content[slices.IndexFunc(root.Content, func(n *yaml.Node) bool { return n.Value == "limits" })+1]
		limits.Content = append(limits.Content, scalar("live"), live)
	}
	root.Content = append(root.Content, scalar("methods"), methods)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.Encode(root) // a tree of strings, numbers and booleans always encodes
	enc.Close()
	return b.Bytes()
}

func (c *Config) upstreamNode() *yaml.Node {
	u := c.Upstream
	n := mapping(
		"url", scalar(u.URL),
		"ready", mapping(
			"path", scalar(u.Ready.Path),
			"interval", scalar(u.Ready.Interval.String()),
			"timeout", scalar(u.Ready.Timeout.String()),
			"wait", scalar(u.Ready.Wait.String())),
		"idle_timeout", scalar(u.IdleTimeout.String()),
	)
	if len(u.Command) > 0 {
		cmd := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, w := range u.Command {
			cmd.Content = append(cmd.Content, scalar(w))
		}
		n.Content = append(n.Content, scalar("command"), cmd)
	}
	n.Content = append(n.Content, scalar("restart"), mapping(
		"policy", scalar(u.Restart.Policy),
		"max", value(u.Restart.Max),
		"backoff", scalar(u.Restart.Backoff.String())))
	return n
}

func timeoutsNode(t Timeouts) *yaml.Node {
	n := mapping(
		"connect", scalar(t.Connect.String()),
		"first_byte", scalar(t.FirstByte.String()),
		"idle", scalar(t.Idle.String()),
		"total", scalar(t.Total.String()))
	n.Style = yaml.FlowStyle
	return n
}

func methodNode(m *Method) *yaml.Node {
	n := mapping()
	if !m.AllRoutes {
		n.Content = append(n.Content, scalar("mode"), quoted(string(m.Mode)))
	}
	switch {
	case m.Handler != "":
		n.Content = append(n.Content, scalar("handler"), scalar(m.Handler))
	case m.Mode == ModeBidi: // frames as they are: no body, reply or output
		n.Content = append(n.Content, scalar("call"), quoted(m.Verb+" "+m.Path))
	default:
		n.Content = append(n.Content, scalar("call"), quoted(m.Verb+" "+m.Path))
		switch m.Body {
		case BodyTemplate:
			b, _ := json.Marshal(m.Template)
			n.Content = append(n.Content, scalar("body"), quoted(string(b)))
		default:
			n.Content = append(n.Content, scalar("body"), scalar(string(m.Body)))
		}
		n.Content = append(n.Content, scalar("reply"), scalar(string(m.Reply)))
		if !m.Mode.Streaming() {
			n.Content = append(n.Content, scalar("output"), scalar(string(m.Output)))
		}
	}
	if m.Idempotent {
		n.Content = append(n.Content, scalar("idempotent"), scalar("true"))
	}
	if len(m.Scopes) > 0 {
		n.Content = append(n.Content, scalar("scopes"), Strings(m.Scopes))
	}
	n.Content = append(n.Content, scalar("timeouts"), timeoutsNode(m.Timeouts))
	dialectNodes(m, n)
	if m.Description != "" {
		n.Content = append(n.Content, scalar("description"), quoted(m.Description))
	}
	if m.Parameters != nil {
		// Through JSON, which YAML reads as is: numbers stay numbers.
		var doc yaml.Node
		b, _ := json.Marshal(m.Parameters)
		if yaml.Unmarshal(b, &doc) == nil && len(doc.Content) == 1 {
			n.Content = append(n.Content, scalar("parameters"), doc.Content[0])
		}
	}
	if m.Example != nil {
		var doc yaml.Node
		b, _ := json.Marshal(m.Example)
		if yaml.Unmarshal(b, &doc) == nil && len(doc.Content) == 1 {
			n.Content = append(n.Content, scalar("example"), doc.Content[0])
		}
	}
	return n
}

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, scalar(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func quoted(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle}
}

func value(v any) *yaml.Node {
	var n yaml.Node
	n.Encode(v)
	return &n
}
