package main

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"unicode"

	"golang.org/x/term"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// sidecar init: a commented method map (and, with --docker, a Dockerfile)
// for an agent, from its command line and a few flags. It writes only
// files that do not exist: a file already there is an error, and then
// nothing is written.

const initUsage = `init flags (besides --config, the file it writes; default sidecar.yaml):
  --agent "CMD ARGS"      the agent's command line; its first word tells the
                          language: node, npx, tsx, bun: Node; python, uvicorn,
                          fastapi: Python; go run or a path: Go; else generic
  --url URL               where the agent listens (default http://127.0.0.1:8000)
  --query PATH            the agent's route for method query, answered once
                          (default /query; "" for none)
  --stream PATH           the agent's route for method stream_query, a stream
                          (default /stream; "" for none)
  --doors LIST            doors to mount on the platform's port, comma-separated:
                          mcp, a2a, openai, agentcore, foundry
  --docker                also write a Dockerfile for the agent's language,
                          beside the config
`

// sidecarImage is the image the written Dockerfiles copy the sidecar's
// binary from.
const sidecarImage = "ghcr.io/sidecar-dev/sidecar:latest"

// initDefaultURL is where the agent listens unless --url says otherwise:
// where the repository's examples listen.
const initDefaultURL = "http://127.0.0.1:8000"

//go:embed templates
var initTemplates embed.FS

var initTemplate = template.Must(template.New("").Funcs(template.FuncMap{
	// q is s as a YAML double-quoted scalar: a JSON string is one.
	"q": func(s string) string { b, _ := json.Marshal(s); return string(b) },
}).ParseFS(initTemplates, "templates/*.tmpl"))

// language is what the agent's command says it is written in: it picks
// the Dockerfile, and names the agent in the method map's first line.
type language struct {
	Name    string // node, python, go, generic: the Dockerfile's template
	Article string // "a Node", for the map's first line
	Title   string // Node, for what init prints
}

var (
	langNode    = language{"node", "a Node", "Node"}
	langPython  = language{"python", "a Python", "Python"}
	langGo      = language{"go", "a Go", "Go"}
	langGeneric = language{"generic", "an", "generic"}
)

// languageOf is the language of the agent's command line argv: its first
// word (node, python3, uvicorn…), `go run`, else a path's extension (a
// path with none is taken to be a Go binary).
func languageOf(argv []string) language {
	if len(argv) == 0 {
		return langGeneric
	}
	first := path.Base(argv[0])
	switch {
	case slices.Contains([]string{"node", "nodejs", "npx", "npm", "tsx", "ts-node", "bun", "deno", "pnpm", "yarn"}, first):
		return langNode
	case first == "python" || strings.HasPrefix(first, "python3") ||
		slices.Contains([]string{"uvicorn", "fastapi", "gunicorn", "hypercorn", "uv", "poetry", "adk"}, first):
		return langPython
	case first == "go" && len(argv) > 1 && argv[1] == "run":
		return langGo
	case strings.Contains(argv[0], "/"):
		switch path.Ext(first) {
		case ".py":
			return langPython
		case ".js", ".mjs", ".cjs", ".ts":
			return langNode
		case "":
			return langGo
		}
	}
	return langGeneric
}

// initDoor is a door init can mount: where, and what its line says.
type initDoor struct {
	name   string
	mount  string
	method bool   // its section names the one method its calls go to
	what   string // the comment above its line
	show   string // for what init prints: its URL, {base} the listener's
}

// initDoors are the doors --doors takes, in the order they are written.
// A2A and MCP cannot mount at /, the platform's; OpenAI's routes are under
// /v1 wherever it is, so at / its clients' base URL is the usual …/v1.
var initDoors = []initDoor{
	{name: "mcp", mount: "/mcp", what: "MCP (Streamable HTTP) at /mcp, each method a tool: docs/mcp.md", show: "{base}/mcp"},
	{name: "a2a", mount: "/a2a", method: true, what: "A2A: JSON-RPC at /a2a, its card at /a2a/.well-known/agent-card.json: docs/a2a.md", show: "{base}/a2a (card: {base}/a2a/.well-known/agent-card.json)"},
	{name: "openai", mount: "/", method: true, what: "OpenAI-compatible: /v1/models, /v1/chat/completions, /v1/responses: docs/openai.md", show: "{base}/v1 (the clients' base URL; model: the method's name)"},
	{name: "agentcore", mount: "/", method: true, what: "AWS Bedrock AgentCore Runtime: /invocations, /ping: docs/agentcore.md", show: "{base}/invocations"},
	{name: "foundry", mount: "/", method: true, what: "Azure AI Foundry hosted agents: /invocations, /readiness: docs/foundry.md", show: "{base}/invocations"},
}

// initFlags are what sidecar init's flags ask for.
type initFlags struct {
	config string
	agent  string
	url    string
	query  string
	stream string
	doors  string
	docker bool
}

// mapData is what templates/sidecar.yaml.tmpl writes.
type mapData struct {
	File       string   // the map's file name, for its first line
	Lang       language // the agent's
	Agent      string   // its command line, "" when not given
	ConfigFlag string   // " --config FILE" for the commands shown, "" for the default
	URL        string   // upstream.url
	URLComment []string // the comment above it
	Query      string   // the agent's route of method query, "" for none
	QueryCall  string   // its call
	Stream     string   // the agent's route of method stream_query, "" for none
	StreamCall string   // its call
	Doors      []doorLine
}

// doorLine is a door's entry under protocols: its key, its flow-style
// section and the comment above it.
type doorLine struct{ Name, Section, Comment string }

// initPlan is what init writes: the method map's and the Dockerfile's
// paths and contents (no Dockerfile: empty), and the next steps it prints.
type initPlan struct {
	configPath, configText string
	dockerPath, dockerText string
	next                   string
}

// runInit is `sidecar init`. It asks for the agent's command on in when
// interactive (stdin a terminal) and --agent is missing; otherwise it
// never reads in.
func runInit(args []string, in io.Reader, interactive bool, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("sidecar init", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	var f initFlags
	flags.StringVar(&f.config, "config", "sidecar.yaml", "")
	flags.StringVar(&f.agent, "agent", "", "")
	flags.StringVar(&f.url, "url", initDefaultURL, "")
	flags.StringVar(&f.query, "query", "/query", "")
	flags.StringVar(&f.stream, "stream", "/stream", "")
	flags.StringVar(&f.doors, "doors", "", "")
	flags.BoolVar(&f.docker, "docker", false, "")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			fmt.Fprintf(stdout, "\nsidecar init: %s\n", commandDocs["init"])
			return nil
		}
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar init: %v\n\n%s", err, initUsage)}
	}
	if flags.NArg() > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar init: unexpected argument %q (quote the agent's command: --agent \"node dist/agent.js\")\n\n%s", flags.Arg(0), initUsage)}
	}
	agentGiven := false
	flags.Visit(func(fl *flag.Flag) { agentGiven = agentGiven || fl.Name == "agent" })
	if !agentGiven && interactive {
		fmt.Fprint(stderr, "The agent's command line (e.g. node dist/agent.js, python3 agent.py): ")
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && line == "" {
			return &exitError{code: 2, msg: "\nsidecar init: no agent command given: pass --agent \"CMD ARGS\""}
		}
		f.agent = strings.TrimSpace(line)
	}
	plan, err := f.plan()
	if err != nil {
		return &exitError{code: 2, msg: "sidecar init: " + err.Error()}
	}
	if err := plan.write(); err != nil {
		return &exitError{code: 1, msg: "sidecar init: " + err.Error()}
	}
	fmt.Fprint(stdout, plan.next)
	return nil
}

// isTerminal reports whether f is a terminal, where init may ask for what
// its flags did not say. /dev/null is a character device but no terminal:
// the check is the terminal's own ioctl, not the file's mode.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// plan checks the flags and renders the files. The method map it renders
// must pass the config parser, as `sidecar validate` checks it.
func (f initFlags) plan() (*initPlan, error) {
	argv, err := splitCommand(f.agent)
	if err != nil {
		return nil, fmt.Errorf("--agent %q: %v", f.agent, err)
	}
	if f.docker && len(argv) == 0 {
		return nil, errors.New("--docker needs --agent: the image's CMD is the agent's command")
	}
	if err := checkAgentURL(f.url); err != nil {
		return nil, fmt.Errorf("--url %q: %v", f.url, err)
	}
	for _, r := range []struct{ flag, route string }{{"--query", f.query}, {"--stream", f.stream}} {
		if err := checkRoute(r.route); err != nil {
			return nil, fmt.Errorf("%s %q: %v", r.flag, r.route, err)
		}
	}
	if f.query == "" && f.stream == "" {
		return nil, errors.New(`--query "" and --stream "" leave no method: give the agent's route for one of them`)
	}
	doorList, err := pickDoors(f.doors)
	if err != nil {
		return nil, fmt.Errorf("--doors %q: %v", f.doors, err)
	}
	if strings.TrimSpace(f.config) == "" {
		return nil, errors.New("--config is empty: name the file to write (default sidecar.yaml)")
	}

	lang := languageOf(argv)
	agent := shellJoin(argv)
	configFlag := ""
	if f.config != "sidecar.yaml" {
		configFlag = " --config " + shellQuote(f.config)
	}
	// The doors' calls go to the streaming method when there is one: it
	// answers their streaming calls and their unary ones alike.
	method := "stream_query"
	if f.stream == "" {
		method = "query"
	}
	data := mapData{
		File:       filepath.Base(f.config),
		Lang:       lang,
		Agent:      agent,
		ConfigFlag: configFlag,
		URL:        f.url,
		URLComment: urlComment(f.url),
		Query:      f.query,
		QueryCall:  "POST " + f.query,
		Stream:     f.stream,
		StreamCall: "POST " + f.stream,
	}
	for _, d := range doorList {
		section := fmt.Sprintf("{mount: %s}", d.mount)
		if d.method {
			section = fmt.Sprintf("{mount: %s, method: %s}", d.mount, method)
		}
		data.Doors = append(data.Doors, doorLine{d.name, section, d.what})
	}
	var text bytes.Buffer
	if err := initTemplate.ExecuteTemplate(&text, "sidecar.yaml.tmpl", data); err != nil {
		return nil, err
	}
	if _, err := config.Parse(f.config, text.Bytes(), doors.Kinds(doors.All)...); err != nil {
		return nil, fmt.Errorf("the method map these flags make does not validate, so nothing is written:\n%v", err)
	}
	p := &initPlan{configPath: f.config, configText: text.String()}
	if f.docker {
		p.dockerPath = filepath.Join(filepath.Dir(f.config), "Dockerfile")
		p.dockerText, err = dockerfile(lang, argv, filepath.Base(f.config), filepath.Dir(f.config))
		if err != nil {
			return nil, err
		}
	}
	p.next = nextSteps(p, configFlag, agent, f, doorList)
	return p, nil
}

// write writes the plan's files, none of which may exist: one that does
// is an error naming it, and then neither is written. A file that
// appears between the check and the write (O_EXCL) is refused too, and
// the file written before it removed.
func (p *initPlan) write() error {
	files := [][2]string{{p.configPath, p.configText}}
	if p.dockerPath != "" {
		files = append(files, [2]string{p.dockerPath, p.dockerText})
	}
	for i, file := range files {
		if _, err := os.Lstat(file[0]); err == nil {
			hint := "give --config another path"
			if i > 0 {
				hint = "give --config a path in another folder"
			}
			return fmt.Errorf("%s exists, and init never overwrites a file: nothing was written (move it away, or %s)", file[0], hint)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checking %s: %w", file[0], err)
		}
	}
	var written []string
	for _, file := range files {
		if err := createNew(file[0], file[1]); err != nil {
			for _, w := range written {
				os.Remove(w)
			}
			return err
		}
		written = append(written, file[0])
	}
	return nil
}

// createNew writes text to a file name that must not exist yet.
func createNew(name, text string) error {
	out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists, and init never overwrites a file: nothing was written", name)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	_, err = out.WriteString(text)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// nextSteps is what init prints after writing: the commands to run the
// agent behind the sidecar and call it, and the doors' URLs under
// sidecar dev's defaults.
func nextSteps(p *initPlan, configFlag, agent string, f initFlags, doorList []initDoor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %s\n", p.configPath)
	if p.dockerPath != "" {
		fmt.Fprintf(&b, "wrote %s\n", p.dockerPath)
	}
	if agent == "" {
		agent = "YOUR AGENT'S COMMAND"
	}
	b.WriteString("\nNext:\n")
	fmt.Fprintf(&b, "  sidecar validate%s\n", configFlag)
	fmt.Fprintf(&b, "  sidecar dev%s -- %s\n", configFlag, agent)
	b.WriteString("Then, from another terminal:\n")
	if f.query != "" {
		b.WriteString("  sidecar call query message=hello\n")
	}
	if f.stream != "" {
		b.WriteString("  sidecar call --stream stream_query message=\"once upon a time\"\n")
	}
	const base = "http://127.0.0.1:8080"
	b.WriteString("  the playground: http://127.0.0.1:8081\n")
	for _, d := range doorList {
		fmt.Fprintf(&b, "  %-9s %s\n", d.name+":", strings.ReplaceAll(d.show, "{base}", base))
	}
	if p.dockerPath != "" {
		fmt.Fprintf(&b, "The image (%s; its build context is the folder it is in):\n", p.dockerPath)
		b.WriteString("  docker build -t my-agent " + shellQuote(filepath.Dir(p.dockerPath)) + "\n")
		b.WriteString("  docker run --rm -p 8080:8080 my-agent\n")
	}
	return b.String()
}

// pickDoors is the doors a --doors list names, in initDoors' order.
func pickDoors(list string) ([]initDoor, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if !slices.ContainsFunc(initDoors, func(d initDoor) bool { return d.name == name }) {
			return nil, fmt.Errorf("no door %q: want some of mcp, a2a, openai, agentcore, foundry", name)
		}
		if want[name] {
			return nil, fmt.Errorf("%s is listed twice", name)
		}
		want[name] = true
	}
	if want["agentcore"] && want["foundry"] {
		return nil, errors.New("agentcore and foundry both serve /invocations, so only one mounts on the platform's port: " +
			"pick one, and give the other a listener of its own in the file (docs/doors.md)")
	}
	var out []initDoor
	for _, d := range initDoors {
		if want[d.name] {
			out = append(out, d)
		}
	}
	return out, nil
}

// checkAgentURL refuses an upstream URL the method map could not hold:
// the parser checks the rest (the sidecar's own port, a socket path too
// long).
func checkAgentURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "unix":
		if !strings.HasPrefix(u.Path, "/") {
			return errors.New("want unix:///absolute/path.sock")
		}
	case u.Scheme != "http":
		return errors.New("want http://host:port, e.g. http://127.0.0.1:8000 (or unix:///path/to.sock)")
	case u.Port() == "":
		return errors.New("no port: want http://host:port, e.g. http://127.0.0.1:8000")
	}
	return nil
}

// urlComment is the comment above upstream.url: how the agent learns
// where to listen when the sidecar starts it.
func urlComment(raw string) []string {
	u, _ := url.Parse(raw)
	if u.Scheme == "unix" {
		return []string{
			"Where the agent listens. Started by the sidecar (the command after --),",
			"the agent gets AGENT_SOCKET=" + u.Path + ": listen on that socket.",
		}
	}
	return []string{
		"Where the agent listens. Started by the sidecar (the command after --),",
		"the agent gets PORT=" + u.Port() + ": listen on that port.",
	}
}

// checkRoute refuses an agent route that is not a plain path: "" (no
// such method) is fine.
func checkRoute(route string) error {
	if route == "" {
		return nil
	}
	if !strings.HasPrefix(route, "/") {
		return errors.New("want a path starting with /, e.g. /query")
	}
	if i := strings.IndexFunc(route, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("a space or control character at byte %d: want a plain path", i)
	}
	return nil
}

// splitCommand splits a command line into its words as a POSIX shell
// would for plain words, 'single' and "double" quotes and backslashes;
// no variables, globs or operators.
func splitCommand(s string) ([]string, error) {
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }); i >= 0 {
		return nil, fmt.Errorf("a control character at byte %d", i)
	}
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("an unclosed %c quote", quote)
	case escaped:
		return nil, errors.New("a backslash at the end")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// shellJoin is argv as a command line a shell splits back into argv.
func shellJoin(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// shellQuote is s as one shell word: as it is when it needs no quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:=@%+,", r)))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
