package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// mountEveryDoor is the protocols section mounting every registered door
// on the platform's listener at once, each under /<its name>, its calls
// going to method; and those doors.
func mountEveryDoor(method string) (string, []doors.Door) {
	var b strings.Builder
	var mounted []doors.Door
	b.WriteString("protocols:\n")
	for _, d := range doors.All {
		if d.Probe.Section == nil || d.Probe.Conversations {
			continue // agent_platform: the listener they mount on; the live door: no calls
		}
		mounted = append(mounted, d)
		fmt.Fprintf(&b, "  %s: %s\n", d.Name, d.Probe.Section(core.At{Mount: "/" + d.Name}, method))
	}
	return b.String(), mounted
}

// freeLoopback is a listener on a free loopback port.
func freeLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestMountedDoorsOnOnePort: every registered door mounted on the
// platform's listener at once, beside the contract, an admin listener
// watching: each door's call through the one port is answered with the
// Server-Timing of its phases, logged with the door's own protocol and
// counted under it in sidecar_protocol_calls_total, never as
// agent_platform's; the platform's health routes (/healthz, /health, /)
// answer exactly as on a sidecar with no door mounted.
func TestMountedDoorsOnOnePort(t *testing.T) {
	agent := newHostileAgent(t)
	head := "upstream: {url: \"" + agent.url + "\"}\n" + hostileMethods + "shutdown: {drain: 500ms, agent_grace: 1s}\n"
	sections, mounted := mountEveryDoor("query")
	ln := freeLoopback(t)
	cfg, _, logs := serveYAML(t, head+"admin: {listen: \"127.0.0.1:0\"}\n"+sections, ln)
	listener := "http://" + ln.Addr().String()
	plainLn := freeLoopback(t)
	serveYAML(t, head, plainLn)
	plain := "http://" + plainLn.Addr().String()
	admin := adminAddr(t, logs) // before the calls take the lines

	for _, d := range mounted {
		url := d.URL(listener, cfg.Protocols.Door(d.Name))
		logs.TakeAll()
		_, resp := call(t, d.Probe.Request(url, "query", false))
		if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "answered") {
			t.Errorf("%s at %s = %d %q, want 200 with the agent's answer", d.Name, url, resp.StatusCode, body)
			continue
		}
		checkServerTiming(t, d.Name+"'s call through the mount", resp, "queue", "connect", "agent")
		line := callLine(t, logs)
		if line["protocol"] != d.Name || line["status"] != int64(http.StatusOK) || line["route"] == "" {
			t.Errorf("%s's call through the mount logged %v, want protocol %s, status 200, its route", d.Name, line, d.Name)
		}
	}

	// The calls are counted under their doors' labels, none under the
	// platform's whose listener they came in on.
	var wants []string
	for _, d := range mounted {
		wants = append(wants, fmt.Sprintf(`sidecar_protocol_calls_total{outcome="ok",protocol=%q} 1`, d.Name))
	}
	metrics := scrape(t, admin, wants)
	if strings.Contains(metrics, `protocol="agent_platform"`) {
		t.Errorf("/metrics counts calls under agent_platform, which got none:\n%s", grepLines(metrics, "sidecar_protocol_calls_total"))
	}

	// The platform's health routes, GET and HEAD, as with no door mounted.
	waitHealthy(t, listener)
	waitHealthy(t, plain)
	for _, path := range []string{"/healthz", "/health", "/"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			want := healthAnswer(t, method, plain+path)
			if got := healthAnswer(t, method, listener+path); got != want {
				t.Errorf("%s %s with every door mounted = %s, want as with none: %s", method, path, got, want)
			}
		}
	}
}

// callLine waits for the one "call" log line of a call just answered (it
// is written once the reply is out) and returns its fields.
func callLine(t *testing.T, logs *observer.ObservedLogs) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(5 * time.Millisecond) {
		if l := logs.FilterMessage("call").All(); len(l) > 0 {
			if len(l) > 1 {
				t.Errorf("%d call lines for one call: %v", len(l), l)
			}
			return l[0].ContextMap()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call line %v after the call was answered", hostileBound)
		}
	}
}

// adminAddr is the admin listener's address, from its log line.
func adminAddr(t *testing.T, logs *observer.ObservedLogs) string {
	t.Helper()
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(5 * time.Millisecond) {
		for _, l := range logs.FilterMessage("admin listening").All() {
			if a, _ := l.ContextMap()["addr"].(string); a != "" {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no admin listening line with its addr after %v", hostileBound)
		}
	}
}

// scrape reads the admin listener's /metrics until it holds every line of
// wants (a call is counted just after its reply leaves), failing the
// test for those it lacks after a bound; it returns the last read.
func scrape(t *testing.T, admin string, wants []string) string {
	t.Helper()
	var text string
	var missing []string
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+admin+"/metrics", http.NoBody)
		_, resp := call(t, req)
		text = string(readAll(t, resp))
		missing = missing[:0]
		for _, w := range wants {
			if !strings.Contains(text, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range missing {
		t.Errorf("/metrics lacks %s; it has:\n%s", w, grepLines(text, "sidecar_protocol_calls_total"))
	}
	return text
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var l []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			l = append(l, line)
		}
	}
	return strings.Join(l, "\n")
}

// waitHealthy waits for the listener's /healthz to answer 200.
func waitHealthy(t *testing.T, listener string) {
	t.Helper()
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(10 * time.Millisecond) {
		if strings.HasPrefix(healthAnswer(t, http.MethodGet, listener+"/healthz"), "200 ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/healthz not 200 after %v", listener, hostileBound)
		}
	}
}

// healthAnswer is a health route's answer, its status, Content-Type and
// body, as one string to compare.
func healthAnswer(t *testing.T, method, url string) string {
	t.Helper()
	req, _ := http.NewRequest(method, url, http.NoBody)
	_, resp := call(t, req)
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
}

// TestMountedDrainOnSIGTERM: the sidecar binary with every door mounted
// on its one port, a stream open on each: SIGTERM ends each stream with
// its own door's drain ending (one failure, in the door's shape, saying
// the sidecar is shutting down), as on a listener of its own, and the
// sidecar exits 1 (the drain ended calls).
func TestMountedDrainOnSIGTERM(t *testing.T) {
	agent := newHostileAgent(t)
	sections, mounted := mountEveryDoor("stream_hold")
	// A 4s drain keeps its last second (endWindow) for ending the
	// streams: time enough for their failures on a loaded machine.
	p := startProc(t, "upstream: {url: \""+agent.url+"\"}\n"+hostileMethods+hostileDrain+sections, nil)
	cfg, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\n"+hostileMethods+sections), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	ends := make(map[string]chan []byte, len(mounted))
	for _, d := range mounted {
		url := d.URL(p.base, cfg.Protocols.Door(d.Name))
		_, resp := call(t, d.Probe.Request(url, "stream_hold", true))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s's stream at %s = %d %q", d.Name, url, resp.StatusCode, readAll(t, resp))
		}
		end := make(chan []byte, 1)
		ends[d.Name] = end
		go func() {
			b, _ := io.ReadAll(resp.Body) // the connection's deadline bounds it
			end <- b
		}()
	}
	agent.waitHeld(t, int32(len(mounted)))
	p.cmd.Process.Signal(syscall.SIGTERM)
	for _, d := range mounted {
		body := <-ends[d.Name]
		errs, err := d.Probe.Errors(body)
		if err != nil || len(errs) != 1 || !strings.Contains(errs[0], "shutting down") {
			t.Errorf("%s's stream at SIGTERM = %q: failures %q (%v), want one saying the sidecar is shutting down", d.Name, body, errs, err)
		}
	}
	if code := p.wait(hostileBound); code != 1 {
		t.Errorf("exit code = %d, want 1 (the drain ended calls)", code)
	}
}

// TestMountedNoRoute: on the platform's listener with doors mounted, a
// path nobody serves is answered 404 in the platform's error shape,
// naming the contract's routes and each mounted door with the paths it
// claims there, and nothing else of the map: not the agent's URL, not a
// door's other settings. With no door mounted the 404 names the
// contract's routes alone.
func TestMountedNoRoute(t *testing.T) {
	agent := newHostileAgent(t)
	head := "upstream: {url: \"" + agent.url + "\"}\n" + hostileMethods + "shutdown: {drain: 500ms, agent_grace: 1s}\n"
	client := &http.Client{Timeout: hostileBound, Transport: &http.Transport{DisableKeepAlives: true}}
	notFound := func(base, path string) string {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Detail string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s = %d (%v), want 404 with the platform's {\"detail\": …}", path, resp.StatusCode, err)
		}
		return body.Detail
	}
	const contract = "the sidecar serves POST /api/reasoning_engine, POST /api/stream_reasoning_engine and GET /healthz"

	sections, mounted := mountEveryDoor("query")
	everyLn := freeLoopback(t)
	serveYAML(t, head+sections, everyLn)
	var under []string
	for _, d := range mounted {
		under = append(under, d.Name+" at /"+d.Name+"/…")
	}
	want := `no route "/nope"; ` + contract + "; mounted here: " + strings.Join(under, "; ")
	if got := notFound("http://"+everyLn.Addr().String(), "/nope"); got != want {
		t.Errorf("every door mounted under its name: 404 says\n%s\nwant\n%s", got, want)
	}

	// At "/" a door claims its routes; one mounted under a path, the path.
	mixedLn := freeLoopback(t)
	serveYAML(t, head+"protocols:\n  openai: {mount: /, method: query}\n  a2a: {mount: /agents/a2a, method: query, url: \"https://agent.example/a2a\"}\n  mcp: {mount: /tools}\n", mixedLn)
	got := notFound("http://"+mixedLn.Addr().String(), "/v2/chat/completions")
	for _, want := range []string{`no route "/v2/chat/completions"; ` + contract + "; mounted here: ", "a2a at /agents/a2a/…", "mcp at /tools/…", "openai at /v1/…"} {
		if !strings.Contains(got, want) {
			t.Errorf("openai at /, a2a and mcp under paths: 404 says %q, want %q in it", got, want)
		}
	}
	for _, secret := range []string{agent.url, strings.TrimPrefix(agent.url, "http://"), "agent.example", "query"} {
		if strings.Contains(got, secret) {
			t.Errorf("the 404 says %q, which only the map should know: %s", secret, got)
		}
	}

	plainLn := freeLoopback(t)
	serveYAML(t, head, plainLn)
	if got, want := notFound("http://"+plainLn.Addr().String(), "/nope"), `no route "/nope"; `+contract; got != want {
		t.Errorf("no door mounted: 404 says %q, want %q", got, want)
	}
}
