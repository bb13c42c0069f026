package devapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/testports"
)

// askingAgent streams ndjson: a call without reply gets a text event then
// the question of its route (/form: a form of every field kind; /url: a
// url question; /confirm: ADK's tool confirmation event); a call with
// reply gets one text event saying what it got. replies has the reply
// members it got, in order.
func askingAgent(t *testing.T) (url string, replies func() []string) {
	var mu sync.Mutex
	var got []string
	questions := map[string]string{
		"/form": `{"input_required":{"id":"q1","message":"Which account?","schema":{"type":"object","properties":{` +
			`"account":{"type":"string","enum":["checking","savings"]},"amount":{"type":"integer","minimum":1},` +
			`"notify":{"type":"boolean"},"note":{"type":"string"}},"required":["account","amount"]}}}`,
		"/url": `{"input_required":{"id":"q2","kind":"url","message":"Sign in first.","url":"https://example.com/signin"}}`,
		"/confirm": `{"author":"transfer","content":{"role":"user","parts":[{"functionCall":{"id":"adk-c1","name":"adk_request_confirmation",` +
			`"args":{"originalFunctionCall":{"id":"adk-t1","name":"transfer_money","args":{"amount":100}},"toolConfirmation":{"hint":"Approve the transfer?","confirmed":false}}}}]},` +
			`"longRunningToolIds":["adk-c1"],"id":"e1"}`,
		"/input": `{"author":"agent","content":{"role":"model","parts":[{"functionCall":{"id":"adk-i1","name":"adk_request_input",` +
			`"args":{"message":"Which city?","response_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}}]},` +
			`"longRunningToolIds":["adk-i1"],"id":"e2"}`,
	}
	text := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"author":"agent","content":{"role":"model","parts":[{"text":` + string(b) + `}]}}` + "\n"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Reply json.RawMessage }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &in)
		w.Header().Set("Content-Type", "application/x-ndjson")
		if in.Reply != nil {
			mu.Lock()
			got = append(got, string(in.Reply))
			mu.Unlock()
			io.WriteString(w, text("answered: "+string(in.Reply)))
			return
		}
		io.WriteString(w, text("Let me check."))
		io.WriteString(w, questions[r.URL.Path]+"\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestPlaygroundQuestion: an agent's question in a stream is shown with a
// form built from its schema (an enum, an integer, a boolean, a string);
// filled and answered, the answer is the next call, the same input plus
// reply, and the agent's answer shows after it. A url question shows its
// link and is declined; ADK's tool confirmation event and its
// request_input call are questions too.
func TestPlaygroundQuestion(t *testing.T) {
	agentURL, replies := askingAgent(t)
	contract, cfg := startSidecar(t, `upstream: {url: `+agentURL+`}
methods:
  form: {mode: stream, call: POST /form, reply: ndjson, example: {message: pay}}
  signin: {mode: stream, call: POST /url, reply: ndjson, example: {message: go}}
  confirm: {mode: stream, call: POST /confirm, reply: ndjson, example: {message: transfer}}
  input: {mode: stream, call: POST /input, reply: ndjson, example: {message: weather}}
`)
	dev := devListener(t, cfg, contract)
	ctx := browser(t)
	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="form"]`))

	run(t, ctx, "running form", chromedp.Click(`#methods button[data-method="form"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the question", lastCall+`?.querySelector(".question form select")`)
	if got := evalString(t, ctx, lastCall+`.querySelector(".question .message").textContent + "|" + [...`+lastCall+`.querySelectorAll(".question [data-field]")].map(e => e.dataset.field + ":" + e.dataset.kind).join(",")`); got != "Which account?|account:enum,amount:integer,notify:boolean,note:string" {
		t.Errorf("question = %q, want its message and a field per property", got)
	}
	// Unfilled, the required fields stop the answer.
	run(t, ctx, "answering unfilled", script(lastCall+`.querySelector(".question button.answer").click()`))
	if n := len(replies()); n != 0 {
		t.Errorf("an answer without its required fields was sent: %q", replies())
	}
	run(t, ctx, "filling the form", script(`{
		const q = `+lastCall+`.querySelector(".question");
		q.querySelector("[data-field=account]").value = "1";
		q.querySelector("[data-field=amount]").value = "5";
		q.querySelector("[data-field=notify]").checked = true;
		q.querySelector("button.answer").click();
	}`))
	waitJS(t, ctx, "the answer's call", lastCall+`.dataset.state === "done" && `+lastCall+`.querySelector(".msg.model .text")?.textContent.startsWith("answered")`)
	want := `{"action":"accept","id":"q1","content":{"account":"savings","amount":5,"notify":true}}`
	if got := replies(); len(got) != 1 || !sameJSON(got[0], want) {
		t.Errorf("the agent got the replies %q, want %s", got, want)
	}
	if got := evalString(t, ctx, lastCall+`.querySelector(".msg.user .text").textContent`); !strings.HasPrefix(got, "accept {") {
		t.Errorf("the answer's card shows the user's turn %q, want the action and content", got)
	}

	run(t, ctx, "running signin", chromedp.Click(`#methods button[data-method="signin"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the url question", lastCall+`?.querySelector(".question a.question-url")`)
	if got := evalString(t, ctx, lastCall+`.querySelector(".question a").href + " " + `+lastCall+`.querySelector(".question a").rel`); got != "https://example.com/signin noopener noreferrer" {
		t.Errorf("url question link = %q", got)
	}
	run(t, ctx, "declining", script(lastCall+`.querySelector(".question button.decline").click()`))
	waitJS(t, ctx, "the decline's call", `document.querySelectorAll("#calls > article.call").length === 4 && `+lastCall+`.dataset.state === "done"`)
	if got := replies(); len(got) != 2 || !sameJSON(got[1], `{"action":"decline","id":"q2"}`) {
		t.Errorf("the agent got the replies %q, want a decline of q2 last", got)
	}

	run(t, ctx, "running confirm", chromedp.Click(`#methods button[data-method="confirm"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the confirmation", lastCall+`?.querySelector(".question [data-field=confirmed]")`)
	run(t, ctx, "approving", script(`{
		const q = `+lastCall+`.querySelector(".question");
		q.querySelector("[data-field=confirmed]").checked = true;
		q.querySelector("button.answer").click();
	}`))
	waitJS(t, ctx, "the approval's call", `document.querySelectorAll("#calls > article.call").length === 6 && `+lastCall+`.dataset.state === "done"`)
	if got := replies(); len(got) != 3 || !sameJSON(got[2], `{"action":"accept","id":"adk-c1","content":{"confirmed":true}}`) {
		t.Errorf("the agent got the replies %q, want the confirmation accepted last", got)
	}

	run(t, ctx, "running input", chromedp.Click(`#methods button[data-method="input"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "ADK's request for input", lastCall+`?.querySelector(".question [data-field=city]")`)
	if got := evalString(t, ctx, lastCall+`.querySelector(".question .message").textContent`); got != "Which city?" {
		t.Errorf("request_input question = %q, want its message", got)
	}
	run(t, ctx, "answering", script(`{
		const q = `+lastCall+`.querySelector(".question");
		q.querySelector("[data-field=city]").value = "Oslo";
		q.querySelector("button.answer").click();
	}`))
	waitJS(t, ctx, "the input's call", `document.querySelectorAll("#calls > article.call").length === 8 && `+lastCall+`.dataset.state === "done"`)
	if got := replies(); len(got) != 4 || !sameJSON(got[3], `{"action":"accept","id":"adk-i1","content":{"city":"Oslo"}}`) {
		t.Errorf("the agent got the replies %q, want the city last", got)
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// TestPlaygroundADKConfirmation: with the ADK preset in front of the
// real TypeScript ADK api server, a tool that requires confirmation
// pauses the run; the page shows ADK's confirmation as a question, and
// the approval, sent as the next call with reply, resumes the run in the
// session: the tool's result is the agent's answer.
func TestPlaygroundADKConfirmation(t *testing.T) {
	deps.NPM(t, "adk")
	port := testports.Free(t)
	adk := fmt.Sprintf("http://127.0.0.1:%d", port)
	_, exited := startProcess(t, nil, func(line string) string {
		if strings.Contains(line, "ADK API Server started") {
			return adk
		}
		return ""
	}, "bash", "../../testdata/adk/start.sh", fmt.Sprint(port))
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(adk + "/list-apps")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `"transfer"`) {
				break
			}
		}
		select {
		case <-exited:
			t.Fatal("the ADK api server exited")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the ADK api server did not list the transfer app")
		}
		time.Sleep(100 * time.Millisecond)
	}
	contract, cfg := startSidecar(t, "upstream: {url: "+adk+", ready: {path: /list-apps}}\npreset: adk\nadk: {app: transfer}\n")
	dev := devListener(t, cfg, contract)
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#session-bar`))
	run(t, ctx, "New session", chromedp.Click(`#new-session`))
	waitJS(t, ctx, "the new session picked", `document.getElementById("session").value !== ""`)
	run(t, ctx, "asking for a transfer", chromedp.Click(`#methods button[data-method="stream_query"]`),
		setInput(`{"message": "approve 100"}`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the confirmation", lastCall+`?.querySelector(".question [data-field=confirmed]")`)
	if got := evalString(t, ctx, lastCall+`.querySelector(".question .message").textContent`); !strings.HasPrefix(got, "Please approve or reject the tool call transfer_money()") {
		t.Errorf("question = %q, want ADK's hint", got)
	}
	run(t, ctx, "approving", script(`{
		const q = `+lastCall+`.querySelector(".question");
		q.querySelector("[data-field=confirmed]").checked = true;
		q.querySelector("button.answer").click();
	}`))
	waitJS(t, ctx, "the resumed run", `document.querySelectorAll("#calls > article.call").length === 2 && `+lastCall+`.dataset.state !== "running"`)
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".msg.model .text, .error")].map(e => e.textContent).join("|")`); got != `transfer_money: {"transferred":100}` {
		t.Errorf("the resumed run shows %q, want the transfer made", got)
	}
}
