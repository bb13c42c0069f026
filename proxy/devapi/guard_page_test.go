package devapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// seen counts the requests a dev listener got, by "METHOD path Host".
type seen struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *seen) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}

// watchedDev serves the dev listener in front of a sidecar in front of a
// counting agent, and records each request it gets before answering it.
func watchedDev(t *testing.T) (dev string, calls *atomic.Int64, got *seen) {
	t.Helper()
	agent, calls := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	h := New(st.cfg, st.contract, Options{})
	got = &seen{n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.mu.Lock()
		got.n[r.Method+" "+r.URL.Path+" "+r.Host]++
		got.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls, got
}

// attack is what a page of another origin tries against the dev
// listener at dev, in order: a no-cors text/plain POST on each REST verb
// (sent, its answer unreadable: CSRF), and a JSON POST in cors mode (a
// preflight first). It resolves to what each fetch gave.
const attack = `(async (dev) => {
  const body = JSON.stringify({class_method: "echo", input: {}});
  const out = [];
  for (const verb of ["query", "streamQuery"]) {
    const url = dev + "/v1/projects/p/locations/l/reasoningEngines/1:" + verb;
    try {
      const r = await fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body});
      out.push("no-cors " + verb + ": " + r.type);
    } catch (e) { out.push("no-cors " + verb + ": " + e); }
    try {
      const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body});
      out.push("cors " + verb + ": " + r.status + " " + await r.text());
    } catch (e) { out.push("cors " + verb + ": " + e); }
  }
  return out.join("\n");
})(%q)`

// TestDevBrowserCrossOrigin: in Chromium, a page of another origin (a
// second server on 127.0.0.1, another port) posts to the dev listener
// and frames the playground. The posts arrive and are refused: the agent
// is never called; the frame is refused: the playground never loads in it.
func TestDevBrowserCrossOrigin(t *testing.T) {
	dev, calls, got := watchedDev(t)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>another site</title><iframe id="f" src="%s/" width="600" height="400"></iframe>`, dev)
	}))
	defer attacker.Close()
	ctx := browser(t)

	// Navigate returns once the page and its frame have loaded.
	run(t, ctx, "loading the other site's page", chromedp.Navigate(attacker.URL+"/"))
	tree, err := chromedp.Call(ctx, page.GetFrameTree, struct{}{})
	if err != nil {
		t.Fatalf("Page.getFrameTree: %v", err)
	}
	if len(tree.FrameTree.ChildFrames) != 1 {
		t.Fatalf("the other site's page has %d frames, want its one iframe", len(tree.FrameTree.ChildFrames))
	}
	if f := tree.FrameTree.ChildFrames[0].Frame; f.URL == dev+"/" && f.UnreachableURL == "" {
		t.Errorf("the playground loaded in another site's frame (url %q); want it refused", f.URL)
	}
	host := strings.TrimPrefix(dev, "http://")
	if got.count("GET / "+host) == 0 {
		t.Errorf("the dev listener never got the frame's GET /: the test proves nothing")
	}
	if n := got.count("GET /playground/methods.json " + host); n != 0 {
		t.Errorf("the playground ran in the frame: methods.json fetched %d times", n)
	}

	out := eval[string](t, ctx, fmt.Sprintf(attack, dev), chromedp.EvalAwaitPromise)
	t.Logf("the other site's fetches:\n%s", out)
	for _, verb := range []string{"query", "streamQuery"} {
		if n := got.count("POST /v1/projects/p/locations/l/reasoningEngines/1:" + verb + " " + host); n != 1 {
			t.Errorf(":%s reached the dev listener %d times, want the no-cors POST only (the cors one stops at its preflight)", verb, n)
		}
	}
	if strings.Contains(out, "the agent's reply") {
		t.Errorf("the other site read the agent's reply:\n%s", out)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the agent ran %d calls sent by another site's page", n)
	}
}

// TestDevBrowserRebinding: Chromium loads the dev listener under a
// foreign name that resolves to 127.0.0.1 (--host-resolver-rules, as a
// rebinding DNS answer would): the page is refused, and a same-origin
// call from it neither runs the agent nor reads its reply. Loaded as
// localhost, the playground and its calls work.
func TestDevBrowserRebinding(t *testing.T) {
	dev, calls, got := watchedDev(t)
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"), chromedp.Flag("no-proxy-server", true))
	rebound := "http://rebind.test:" + devPort(dev)

	run(t, ctx, "loading the dev listener as rebind.test", chromedp.Navigate(rebound+"/"))
	if n := got.count("GET / rebind.test:" + devPort(dev)); n != 1 {
		t.Fatalf("the dev listener got GET / under rebind.test %d times, want 1 (is the resolver rule applied?)", n)
	}
	if text := evalString(t, ctx, `document.body ? document.body.innerText : ""`); !strings.Contains(text, "is not the dev listener's") {
		t.Errorf("the page under rebind.test shows %.300q, want the refusal", text)
	}
	if eval[bool](t, ctx, `document.getElementById("methods") !== null`) {
		t.Error("the playground was served under rebind.test")
	}
	out := eval[string](t, ctx, `fetch("/v1/projects/p/locations/l/reasoningEngines/1:query", {method: "POST",
		headers: {"Content-Type": "application/json"}, body: JSON.stringify({class_method: "echo", input: {}})})
		.then(async r => r.status + " " + await r.text(), e => String(e))`, chromedp.EvalAwaitPromise)
	if !strings.HasPrefix(out, "403 ") || strings.Contains(out, "the agent's reply") {
		t.Errorf("a same-origin call under rebind.test: %s, want 403", out)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the agent ran %d calls from the page under rebind.test", n)
	}

	// Under its own name the same browser gets the playground, and its
	// calls run.
	run(t, ctx, "loading the playground as localhost", chromedp.Navigate("http://localhost:"+devPort(dev)+"/"),
		chromedp.WaitVisible(`#methods button[data-method="echo"]`))
	out = eval[string](t, ctx, `fetch("/v1/projects/p/locations/l/reasoningEngines/1:query", {method: "POST",
		headers: {"Content-Type": "application/json"}, body: JSON.stringify({class_method: "echo", input: {}})})
		.then(async r => r.status + " " + await r.text(), e => String(e))`, chromedp.EvalAwaitPromise)
	if !strings.HasPrefix(out, "200 ") || !strings.Contains(out, "the agent's reply") || calls.Load() != 1 {
		t.Errorf("a call from the playground at localhost: %s (the agent ran %d), want 200 and the agent's reply", out, calls.Load())
	}
}

// contractCall is a page's same-origin call of the Agent Platform
// contract's unary route, resolving to its status and body.
const contractCall = `fetch("/api/reasoning_engine", {method: "POST",
	headers: {"Content-Type": "application/json"}, body: JSON.stringify({class_method: "echo", input: {}})})
	.then(async r => r.status + " " + await r.text(), e => String(e))`

// TestContractBrowserRebinding: sidecar dev's contract listener (the
// Agent Platform contract on 127.0.0.1, which the dev listener calls) is
// held to the guard every door shares. In Chromium, a page under a
// foreign name resolving to 127.0.0.1 (--host-resolver-rules, as a
// rebinding DNS answer would) is refused, and its same-origin call
// neither runs the agent nor reads its reply; a page of another site
// (a server on 127.0.0.1, another port) posting no-cors, unread, does not
// run it either. Loaded as localhost, the same call runs.
func TestContractBrowserRebinding(t *testing.T) {
	agent, calls := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"), chromedp.Flag("no-proxy-server", true))
	port := devPort(st.contract)

	run(t, ctx, "loading the contract listener as rebind.test", chromedp.Navigate("http://rebind.test:"+port+"/healthz"))
	if text := evalString(t, ctx, `document.body ? document.body.innerText : ""`); !strings.Contains(text, "is not this listener's") {
		t.Errorf("the contract's /healthz under rebind.test shows %.300q, want the refusal", text)
	}
	if out := eval[string](t, ctx, contractCall, chromedp.EvalAwaitPromise); !strings.HasPrefix(out, "403 ") || strings.Contains(out, "the agent's reply") {
		t.Errorf("a same-origin call of the contract under rebind.test: %s, want 403", out)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the agent ran %d calls from the page under rebind.test", n)
	}

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>another site</title>`)
	}))
	defer attacker.Close()
	run(t, ctx, "loading another site's page", chromedp.Navigate(attacker.URL+"/"))
	out := eval[string](t, ctx, fmt.Sprintf(`fetch(%q + "/api/reasoning_engine", {method: "POST", mode: "no-cors",
		headers: {"Content-Type": "text/plain"}, body: JSON.stringify({class_method: "echo", input: {}})})
		.then(r => r.type, e => String(e))`, st.contract), chromedp.EvalAwaitPromise)
	if out != "opaque" {
		t.Errorf("another site's no-cors POST gave %q, want an opaque answer (sent, unread)", out)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the agent ran %d calls posted by another site's page", n)
	}

	run(t, ctx, "loading the contract listener as localhost", chromedp.Navigate("http://localhost:"+port+"/healthz"))
	if out := eval[string](t, ctx, contractCall, chromedp.EvalAwaitPromise); !strings.HasPrefix(out, "200 ") || !strings.Contains(out, "the agent's reply") || calls.Load() != 1 {
		t.Errorf("a same-origin call of the contract at localhost: %s (the agent ran %d), want 200 and the agent's reply", out, calls.Load())
	}
}
