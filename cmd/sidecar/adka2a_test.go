package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// testADKQuestionsA2A: the A2A door in front of the preset's
// stream_query, on the TypeScript ADK api server. A message pauses on
// transfer_money's confirmation: the task is input-required with the
// confirmation's question; a data part answers it, on the same task, and
// the task completes with the tool's result, as plain JSON-RPC and as
// @a2a-js/sdk's clients (testdata/a2a/adkconfirm.mjs) see it. A wrong
// answer leaves it waiting; the context's next message reuses its
// session; an answer on another replica, which shares only the task
// store, resumes the run.
func testADKQuestionsA2A(t *testing.T, url string) {
	const doorYAML = "preset: adk\nadk: {app: transfer}\nmethods:\n  chat: {handler: adk.stream_query, emit: text}\nprotocols:\n  a2a: {mount: /a2a, method: chat}\n"
	base := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\n"+doorYAML)
	type task struct {
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
		Status    struct {
			State   string `json:"state"`
			Message struct {
				Parts []struct {
					Kind string          `json:"kind"`
					Text string          `json:"text"`
					Data json.RawMessage `json:"data"`
				} `json:"parts"`
			} `json:"message"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	sendTo := func(base, message string) (task, string) {
		t.Helper()
		r := post(t, base+"/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":`+message+`}}`)
		var out struct {
			Result task `json:"result"`
		}
		json.Unmarshal([]byte(r.body), &out)
		return out.Result, r.body
	}
	send := func(message string) (task, string) { t.Helper(); return sendTo(base, message) }
	askAt := func(t *testing.T, base, text string) (task, string) {
		t.Helper()
		tk, body := sendTo(base, `{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"`+text+`"}]}`)
		if tk.Status.State != "input-required" || len(tk.Status.Message.Parts) != 2 ||
			!strings.Contains(tk.Status.Message.Parts[0].Text, "Please approve or reject the tool call transfer_money()") ||
			!strings.Contains(string(tk.Status.Message.Parts[1].Data), `"schema":{"type":"object","properties":{"confirmed":{"type":"boolean"},"payload":{}},"required":["confirmed"]}`) {
			t.Fatalf("message/send %q = %s, want the task input-required with the confirmation's question", text, body)
		}
		var q struct{ ID string }
		json.Unmarshal(tk.Status.Message.Parts[1].Data, &q)
		if !strings.HasPrefix(q.ID, "adk-") {
			t.Fatalf("the question's id = %q, want the confirmation call's", q.ID)
		}
		return tk, body
	}
	ask := func(t *testing.T, text string) (task, string) { t.Helper(); return askAt(t, base, text) }
	answerAt := func(base string, tk task, data string) (task, string) {
		return sendTo(base, `{"kind":"message","role":"user","messageId":"m2","taskId":"`+tk.ID+`","contextId":"`+tk.ContextID+
			`","parts":[{"kind":"data","data":`+data+`}]}`)
	}
	lastText := func(tk task) string {
		var text string
		for _, a := range tk.Artifacts {
			for _, p := range a.Parts {
				text = p.Text
			}
		}
		return text
	}
	answer := func(tk task, data string) (task, string) { return answerAt(base, tk, data) }

	t.Run("confirmed", func(t *testing.T) {
		tk, _ := ask(t, "approve 100")
		done, body := answer(tk, `{"confirmed":true}`)
		if done.Status.State != "completed" || !strings.Contains(lastText(done), `transfer_money: {"transferred":100}`) {
			t.Errorf("the answer = %s, want the task completed with the transfer made", body)
		}
	})
	t.Run("declined", func(t *testing.T) {
		tk, _ := ask(t, "approve 7")
		done, body := answer(tk, `{"action":"decline"}`)
		if done.Status.State != "completed" || !strings.Contains(lastText(done), "rejected") {
			t.Errorf("the answer = %s, want the task completed with the call rejected", body)
		}
	})
	t.Run("a wrong answer, then the right one", func(t *testing.T) {
		tk, _ := ask(t, "approve 9")
		if _, body := answer(tk, `{"confirmed":"yes"}`); !strings.Contains(body, "-32602") {
			t.Errorf("a wrong answer = %s, want -32602", body)
		}
		done, body := answer(tk, `{"confirmed":true}`)
		if done.Status.State != "completed" || !strings.Contains(lastText(done), `transfer_money: {"transferred":9}`) {
			t.Errorf("the right answer = %s, want the transfer made", body)
		}
	})
	t.Run("the context's next message, in the same session", func(t *testing.T) {
		tk, _ := ask(t, "approve 4")
		if done, body := answer(tk, `{"confirmed":true}`); done.Status.State != "completed" {
			t.Fatalf("the answer = %s", body)
		}
		next, body := send(`{"kind":"message","role":"user","messageId":"m3","contextId":"` + tk.ContextID +
			`","parts":[{"kind":"text","text":"approve 5"}]}`)
		if next.Status.State != "input-required" || next.ContextID != tk.ContextID {
			t.Fatalf("the context's next message = %s, want input-required in the same context", body)
		}
		done, body := answer(next, `{"confirmed":true}`)
		if !strings.Contains(lastText(done), `{"transferred":5}`) {
			t.Errorf("the next answer = %s, want the second transfer made", body)
		}
		// One session holds both runs: the one named after the caller's
		// scoped context (no Authorization: the owner of nothing).
		sum := sha256.Sum256([]byte(core.OwnerOf(http.Header{}).Scope(tk.ContextID)))
		key := hex.EncodeToString(sum[:])[:32]
		resp, err := testClient.Get(url + "/apps/transfer/users/door-" + key + "/sessions/ctx-" + key)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		session, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(session), `{"transferred":4}`) || !strings.Contains(string(session), `{"transferred":5}`) {
			t.Errorf("the context's session = %d %.300s, want both transfers in it", resp.StatusCode, session)
		}
	})
	t.Run("two contexts, two sessions", func(t *testing.T) {
		a, _ := ask(t, "approve 1")
		b, _ := ask(t, "approve 2")
		doneB, body := answer(b, `{"confirmed":true}`)
		if !strings.Contains(lastText(doneB), `{"transferred":2}`) {
			t.Errorf("b's answer = %s", body)
		}
		doneA, body := answer(a, `{"confirmed":true}`)
		if !strings.Contains(lastText(doneA), `{"transferred":1}`) {
			t.Errorf("a's answer = %s", body)
		}
	})
	t.Run("@a2a-js/sdk", func(t *testing.T) {
		deps.MatchLines(t, deps.Node(t, "a2a", "adkconfirm.mjs", base+"/a2a"), []string{
			`{"step":"JSONRPC 1.0 ask","state":"TASK_STATE_INPUT_REQUIRED","kind":"form","schema":["confirmed","payload"],"last":"{\"tool_call\":{\"id\":\"adk-`,
			`{"step":"JSONRPC 1.0 answer","state":"TASK_STATE_COMPLETED","last":"transfer_money: {\"transferred\":21}"}`,
			`{"step":"JSONRPC 0.3 ask","state":"TASK_STATE_INPUT_REQUIRED","kind":"form","schema":["confirmed","payload"],"last":"{\"tool_call\":{\"id\":\"adk-`,
			`{"step":"JSONRPC 0.3 answer","state":"TASK_STATE_COMPLETED","last":"transfer_money: {\"transferred\":22}"}`,
		})
	})
	t.Run("answered on another replica", func(t *testing.T) {
		// Two sidecars share the task store, nothing else: the answer, on
		// the one that never saw the context, finds its session on the
		// ADK api server and resumes the paused run.
		srv := redistest.Start(t)
		yaml := "upstream: {url: " + url + ", ready: {path: /list-apps}}\n" + doorYAML +
			"state: {store: redis, redis: {url: \"" + srv.URL() + "\"}}\n"
		one, other := startSidecar(t, yaml), startSidecar(t, yaml)
		tk, _ := askAt(t, one, "approve 12")
		done, body := answerAt(other, tk, `{"confirmed":true}`)
		if done.Status.State != "completed" || !strings.Contains(lastText(done), `transfer_money: {"transferred":12}`) {
			t.Errorf("the answer on the other replica = %s, want the transfer made", body)
		}
	})
}
