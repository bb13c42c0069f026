package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// defaultListen is where the platform calls when the file says nothing.
const defaultListen = ":8080"

// defaultTimeouts are the clocks of a call when the file sets none.
var defaultTimeouts = Timeouts{
	Connect:   5 * time.Second,
	FirstByte: 5 * time.Minute,
	Idle:      5 * time.Minute,
	Total:     DefaultTotal,
}

// DefaultTotal is the default timeouts.total. The platform severs a stream
// at 15 minutes; ending the call 10 s before leaves the sidecar the time
// to write its final timeout line, so the caller learns why it ended.
const DefaultTotal = 14*time.Minute + 50*time.Second

// defaultLimits bound a call when the file sets none.
var defaultLimits = Limits{
	RequestBytes:  10 << 20,
	RecordBytes:   8 << 20,
	ReplyBytes:    32 << 20,
	HeaderBytes:   64 << 10,
	HeaderTimeout: 10 * time.Second,
	Queue:         100,
	QueueTimeout:  10 * time.Second,
	BodyTimeout:   30 * time.Second,

	TaskStoreBytes: 64 << 20,
	MCPSessions:    10000,
	Subscriptions:  256,
	PerCaller:      PerCaller{Per: time.Minute},
	Live:           DefaultLive,
	Questions:      DefaultQuestions,
	Parts:          DefaultParts,
}

// Load reads and parses the method map at path; kinds are the protocols
// it may serve besides agent_platform, as for Parse.
func Load(path string, kinds ...Kind) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading method map: %w", err)
	}
	return Parse(path, data, kinds...)
}

// Parse decodes and validates a method map. name is used in messages
// ("sidecar.yaml:12: …"). The error, when there is one, is a *Errors
// listing every problem in the file. kinds are the protocols the program
// can serve besides agent_platform (proxy/doors): the other keys of the
// protocols section, each decoded and checked by its Kind.
func Parse(name string, data []byte, kinds ...Kind) (*Config, error) {
	p := &parser{}
	c := p.file(data, kinds)
	if len(p.problems) > 0 {
		return nil, &Errors{File: name, Problems: p.sorted()}
	}
	c.expandPreset()
	c.index()
	if p.checkProtocols(c, p.adminLine); len(p.problems) > 0 {
		return nil, &Errors{File: name, Problems: p.sorted()}
	}
	return c, nil
}

// file decodes the whole method map; c is only meaningful when p found no
// problems.
func (p *parser) file(data []byte, kinds []Kind) *Config {
	c := &Config{
		kinds:    kinds,
		Listen:   defaultListen,
		Timeouts: defaultTimeouts,
		Limits:   defaultLimits,
	}
	c.Upstream.Ready = Ready{Interval: time.Second, Timeout: time.Second, Wait: 30 * time.Second}
	c.Upstream.IdleTimeout = 4 * time.Second
	c.Upstream.Restart = Restart{Policy: RestartNever, Max: 5, Backoff: time.Second}
	c.Shutdown = Shutdown{Drain: 6 * time.Second, AgentGrace: 3 * time.Second}
	c.ADK.Keys = "as_is"
	c.Protocols.AgentPlatform = true
	c.State = State{Store: StoreMemory, Redis: RedisState{KeyPrefix: DefaultKeyPrefix, TaskTTL: DefaultTaskTTL, Lease: DefaultLease}}

	root, ok := p.document(data)
	if !ok {
		return c
	}
	if !p.mapping(root, "", "a mapping with upstream and methods") {
		if isNull(root) {
			p.addf(0, "", "empty file (want a mapping with upstream and methods)")
		}
		return c
	}

	var haveUpstream, haveMethods bool
	var presetLine, adminLine, urlLine, authDoorsLine int
	var methods []methodDraft
	for _, e := range p.entries(root, "") {
		switch e.name {
		case "listen":
			if s, ok := p.scalar(e, e.name); ok {
				if err := checkListen(s); err != nil {
					p.addf(e.val.Line, e.name, "%v", err)
				} else {
					c.Listen = s
				}
			}
		case "upstream":
			haveUpstream = true
			urlLine = p.upstream(e, &c.Upstream)
		case "timeouts":
			c.Timeouts = p.timeouts(e.val, e.name).over(c.Timeouts)
		case "limits":
			p.limits(e.val, e.name, &c.Limits)
		case "shutdown":
			p.shutdown(e.val, e.name, &c.Shutdown)
		case "headers":
			p.headers(e.val, e.name, &c.Headers)
		case "admin":
			adminLine, p.adminLine = e.key.Line, e.key.Line
			p.admin(e.val, e.name, &c.Admin)
		case "methods":
			haveMethods = true
			methods = p.methods(e)
		case "preset":
			if s, ok := p.scalar(e, e.name); ok {
				if s != PresetADK {
					p.addf(e.val.Line, e.name, "unknown preset %q (want %q)", s, PresetADK)
				}
				c.Preset, presetLine = s, e.key.Line
			}
		case "adk":
			p.adk(e.val, e.name, &c.ADK)
		case "protocols":
			p.protocols(e.val, e.name, &c.Protocols, kinds)
		case "trusted_hosts":
			c.TrustedHosts = p.trustedHosts(e)
		case "trusted_proxies":
			c.TrustedProxies = p.trustedProxies(e)
		case "keep_alive_probe":
			p.keepAlive(e, &c.KeepAlive)
		case "state":
			p.state(e, &c.State)
		case "auth":
			authDoorsLine = p.auth(e, &c.Auth)
		default:
			p.unknown(e, "", "listen", "upstream", "timeouts", "limits", "shutdown", "headers", "admin", "preset", "adk", "protocols", "trusted_hosts", "trusted_proxies", "keep_alive_probe", "state", "auth", "methods")
		}
	}
	p.checkAuthDoors(c, authDoorsLine)
	p.checkScopes(c, methods)
	if c.KeepAlive.Path != "" && !c.Protocols.AgentPlatform {
		p.addf(c.KeepAlive.Line, "keep_alive_probe", "the platform's listener serves the probe, and protocols.agent_platform is off (want it on, or no keep_alive_probe)")
	}
	if c.Admin.Listen != "" && samePort(c.Admin.Listen, c.Listen) {
		p.addf(adminLine, "admin.listen", "%q is the public port: metrics must be served elsewhere", c.Admin.Listen)
	}
	// The file's listen only: --listen and $PORT, which win over it, are
	// checked where they are known (CheckListen).
	if c.Upstream.Network == "tcp" && loopsBack(c.Upstream.Address, c.Listen) {
		p.addf(urlLine, "upstream.url", "%q is the sidecar's own address (it listens on %q): every call would come back to it (want the agent's address)", c.Upstream.URL, c.Listen)
	}
	if !haveUpstream {
		p.addf(root.Line, "upstream", "missing (want upstream.url: http://host:port or unix:///path/to.sock)")
	}
	if !haveMethods && c.Preset == "" {
		p.addf(root.Line, "methods", "missing (want at least one method, e.g. methods: {query: {}})")
	}

	if c.ADK.App == "" {
		line := presetLine
		for _, d := range methods {
			if d.m.Handler != "" && line == 0 {
				line = d.m.Line
			}
		}
		if line > 0 {
			p.addf(line, "adk.app", "missing: the ADK handlers need the ADK app name (want adk: {app: my_agent})")
		}
	}

	// The "*" method goes last; the others keep file order.
	var wildcard *Method
	for _, d := range methods {
		d.m.Timeouts = d.timeouts.over(c.Timeouts)
		if d.m.Name == "*" {
			wildcard = d.m
			continue
		}
		c.Methods = append(c.Methods, d.m)
	}
	if wildcard != nil {
		c.Methods = append(c.Methods, wildcard)
	}
	return c
}

// document parses data as one YAML document and returns its root node.
func (p *parser) document(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.addf(0, "", "empty file (want a mapping with upstream and methods)")
		} else {
			p.syntax(data, err)
		}
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(data, err)
		return nil, false
	default:
		p.addf(next.Line, "", "a second YAML document (want one method map per file)")
		return nil, false
	}
	if len(doc.Content) == 0 {
		p.addf(0, "", "empty file (want a mapping with upstream and methods)")
		return nil, false
	}
	return resolve(doc.Content[0]), true
}

// yamlLine picks the line out of the YAML library's messages, which read
// "yaml: line 12: mapping values are not allowed in this context".
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax records a YAML syntax error, with a hint for the two mistakes
// that cause most of them: a tab in the indentation, and an unquoted "*".
func (p *parser) syntax(data []byte, err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	// The library may name the line before a tab; look at both.
	for _, n := range []int{line, line + 1} {
		text, ok := lineOf(data, n)
		if !ok {
			continue
		}
		indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
		if strings.Contains(indent, "\t") {
			line = n
			msg += " (indent with spaces: YAML does not allow tabs)"
			break
		}
		if n == line && strings.HasPrefix(strings.TrimLeft(text, " "), "*") {
			msg += ` (quote a "*" key: "*":)`
			break
		}
	}
	p.addf(line, "", "invalid YAML: %s", msg)
}

// lineOf returns the 1-based line n of data.
func lineOf(data []byte, n int) (string, bool) {
	if n < 1 {
		return "", false
	}
	for i := 1; len(data) > 0; i++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if i == n {
			return string(line), true
		}
		data = rest
	}
	return "", false
}

// checkListen accepts "host:port" with a numeric port; the host may be
// empty (every interface).
func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port (want e.g. \":8080\" or \"127.0.0.1:8080\")", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", s, port)
	}
	return nil
}
