package devapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPlaygroundTimeline: a streamed call's card draws its timeline
// beside its output: the sidecar's queue, connect and agent from the
// reply's Server-Timing (agent at least the agent's wait before its
// head), then a tick per record as each arrives, in order, and the end.
func TestPlaygroundTimeline(t *testing.T) {
	const think = 100 * time.Millisecond
	next := make(chan struct{})
	ended := t.Context() // done as the test ends, before its cleanups
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(think) // the agent thinking before its first byte
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range 3 {
			if i > 0 { // each record after the first waits for the test
				select {
				case next <- struct{}{}:
				case <-r.Context().Done():
					return
				case <-ended.Done():
					return
				}
			}
			io.WriteString(w, `{"n":`+string(rune('0'+i))+"}\n")
			http.NewResponseController(w).Flush()
		}
	}))
	t.Cleanup(agent.Close)
	contract, cfg := startSidecar(t, "upstream: {url: "+agent.URL+"}\nmethods:\n  stream_query: {mode: stream, call: POST /s, reply: ndjson}\n")
	dev := devListener(t, cfg, contract)
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="stream_query"]`))
	run(t, ctx, "watching for CSP violations", script(`window.cspViolations = [];
		document.addEventListener("securitypolicyviolation", e => window.cspViolations.push(e.violatedDirective + " " + e.sample))`))
	run(t, ctx, "running stream_query", chromedp.Click(`#methods button[data-method="stream_query"]`), chromedp.Click(`#run`))
	phases := `[...` + lastCall + `.querySelectorAll(".timeline [data-phase]")].map(b => b.dataset.phase).join(",")`

	// The first record is in, the agent holds the second: the sidecar's
	// phases and one tick are drawn already.
	waitJS(t, ctx, "the first record's tick", phases+` === "queue,connect,agent,record"`)
	for i := range 2 {
		select {
		case <-next:
		case <-time.After(15 * time.Second):
			t.Fatalf("the agent was not asked for record %d", i+2)
		}
		waitJS(t, ctx, "the next record's tick", `[...`+lastCall+`.querySelectorAll(".timeline [data-phase=record]")].length === `+string(rune('2'+i)))
	}
	waitJS(t, ctx, "the call's end", lastCall+`.dataset.state === "done"`)
	if got := evalString(t, ctx, phases); got != "queue,connect,agent,record,record,record,end" {
		t.Fatalf("timeline bars = %q, want queue, connect, agent, a tick per record, the end", got)
	}

	ms := func(sel string) []float64 {
		return eval[[]float64](t, ctx, `[...`+lastCall+`.querySelectorAll(".timeline `+sel+`")].map(b => Number(b.dataset.ms))`)
	}
	if agent := ms(`[data-phase=agent]`); agent[0] < float64(think.Milliseconds()) {
		t.Errorf("agent bar = %v ms, want at least the agent's %v before its head", agent[0], think)
	}
	records, end := ms(`[data-phase=record]`), ms(`[data-phase=end]`)
	for i := 1; i < len(records); i++ {
		if records[i] < records[i-1] {
			t.Errorf("record ticks at %v ms: not in arrival order", records)
		}
	}
	if end[0] < records[len(records)-1] {
		t.Errorf("end at %v ms, before the last record at %v ms", end[0], records[len(records)-1])
	}
	// Drawn left to right in that order, beside the output.
	lefts := eval[[]float64](t, ctx, `[...`+lastCall+`.querySelectorAll(".timeline [data-phase=record], .timeline [data-phase=end]")].map(b => b.getBoundingClientRect().left)`)
	for i := 1; i < len(lefts); i++ {
		if lefts[i] < lefts[i-1] {
			t.Errorf("ticks and end mark at x = %v: not left to right", lefts)
		}
	}
	if got := evalString(t, ctx, `(() => { const c = `+lastCall+`; const o = c.querySelector(".chat").getBoundingClientRect(), l = c.querySelector(".timeline").getBoundingClientRect();
		return l.left >= o.right - 1 && l.top < o.bottom ? "beside" : "not beside: " + JSON.stringify([o, l]); })()`); got != "beside" {
		t.Errorf("the timeline is %s the output", got)
	}
	if got := evalString(t, ctx, `window.cspViolations.join(",")`); got != "" {
		t.Errorf("the page broke its Content-Security-Policy: %s", got)
	}
}

// TestPlaygroundTimelineLongStream: a stream of far more records than the
// timeline draws ticks for counts them all in its label and draws at most
// 200 ticks, the last record's among them.
func TestPlaygroundTimelineLongStream(t *testing.T) {
	st := newStack(t, Options{})
	ctx := browser(t)
	run(t, ctx, "loading the playground", chromedp.Navigate(st.dev+"/"), chromedp.WaitVisible(`#methods button[data-method="stream"]`))
	run(t, ctx, "running a stream of 1,000 records", chromedp.Click(`#methods button[data-method="stream"]`),
		setInput(`{"lines": 1000}`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the call's end", lastCall+`?.dataset.state === "done"`)
	ticks := eval[[]float64](t, ctx, `[...`+lastCall+`.querySelectorAll(".timeline [data-phase=record]")].map(b => Number(b.dataset.ms))`)
	label := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".timeline .lbl")].map(l => l.textContent).join(",")`)
	last := eval[float64](t, ctx, `Number([...`+lastCall+`.querySelectorAll(".raw .line .t")].pop().textContent.replace(/[^0-9]/g, ""))`)
	if len(ticks) == 0 || len(ticks) > 200 || !strings.Contains(label, "records · 1000") {
		t.Fatalf("%d ticks, labels %q: want at most 200 and the count of all 1000", len(ticks), label)
	}
	if got := ticks[len(ticks)-1]; got < last-1 || got > last+1 {
		t.Errorf("the last tick at %v ms, the last record at %v ms", got, last)
	}
}
