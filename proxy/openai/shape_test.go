package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// agentInput is what the agent's /input echoed of the method's input,
// read from a whole answer's text: its body, and the answer's id.
func agentInput(t *testing.T, route, answer string) (got json.RawMessage, id string) {
	t.Helper()
	var c struct {
		ID      string
		Choices []struct{ Message struct{ Content string } }
		Output  []struct{ Content []struct{ Text string } }
	}
	if err := json.Unmarshal([]byte(answer), &c); err != nil {
		t.Fatalf("%s answered %s (%v)", route, answer, err)
	}
	text := ""
	if route == RouteChat && len(c.Choices) == 1 {
		text = c.Choices[0].Message.Content
	} else if len(c.Output) == 1 && len(c.Output[0].Content) == 1 {
		text = c.Output[0].Content[0].Text
	}
	var in struct{ Got json.RawMessage }
	if err := json.Unmarshal([]byte(text), &in); err != nil {
		t.Fatalf("%s answered %s: no agent's input (%v)", route, answer, err)
	}
	return in.Got, c.ID
}

// TestInputShape: a request calls the method with the shape every
// conversational door gives (docs/doors.md): message, the last user
// message's text; messages, the history in chat form ({role, content}):
// chat completions' messages as sent, a responses input's items with a
// role, their content a string; ids, the answer's id (and a responses
// request's previous_response_id), a responses request's scoped to the
// caller.
func TestInputShape(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "input", Model: "m"})

	messages := `[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"42"},{"role":"user","content":"hi \"there\""}]`
	_, answer := post(t, url+RouteChat, `{"model":"m","messages":`+messages+`}`)
	got, id := agentInput(t, RouteChat, answer)
	if want := `{"message":"hi \"there\"","messages":` + messages + `,"ids":{"completion_id":"` + id + `"}}`; string(got) != want || !strings.HasPrefix(id, "chatcmpl-") {
		t.Errorf("chat completions: the agent's input = %s, want %s", got, want)
	}

	input := `[{"role":"developer","content":"be brief"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"},{"type":"input_text","text":"b"}]},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"42"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"o","annotations":[]}]},{"role":"assistant"},{"role":"user","content":"hi"}]`
	_, answer = post(t, url+RouteResponses, `{"model":"m","previous_response_id":"resp_before","input":`+input+`}`)
	nobody := core.OwnerOf(http.Header{}) // the ids the agent sees are scoped to the caller
	got, id = agentInput(t, RouteResponses, answer)
	want := `{"message":"hi","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"a\nb"},{"role":"assistant","content":"o"},` +
		`{"role":"assistant","content":""},{"role":"user","content":"hi"}],"ids":{"response_id":"` + nobody.Scope(id) + `","previous_response_id":"` + nobody.Scope("resp_before") + `"}}`
	if string(got) != want || !strings.HasPrefix(id, "resp_") {
		t.Errorf("responses: the agent's input = %s, want %s", got, want)
	}

	_, answer = post(t, url+RouteResponses, `{"model":"m","input":"once"}`)
	got, id = agentInput(t, RouteResponses, answer)
	if want := `{"message":"once","messages":[{"role":"user","content":"once"}],"ids":{"response_id":"` + nobody.Scope(id) + `"}}`; string(got) != want {
		t.Errorf("responses, a string input: the agent's input = %s, want %s", got, want)
	}

	resp, answer := post(t, url+RouteResponses, `{"model":"m","previous_response_id":7,"input":"once"}`)
	if e, ok := readError(t, answer); resp.StatusCode != 400 || !ok || str(e.Param) != "previous_response_id" || str(e.Code) != "invalid_type" {
		t.Errorf("previous_response_id 7: %d %s, want 400 invalid_type", resp.StatusCode, answer)
	}
}

// TestInputBounded: the history a responses request's input becomes is a
// copy, bounded by limits.request_bytes as the body is: a body far past
// it is refused before it is read (413), and one just under it made of
// the items that grow most (a role, no content) gives an input of at most
// about three times the body.
func TestInputBounded(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {request_bytes: 8KiB}\n")
	url := s.serve(t, Options{Method: "input", Model: "m"})
	items := strings.Repeat(`{"role":"a"},`, 600) + `{"role":"user","content":"hi"}`
	body := `{"model":"m","input":[` + items + `]}`
	_, answer := post(t, url+RouteResponses, body)
	if got, _ := agentInput(t, RouteResponses, answer); len(got) > 3*len(body) || strings.Count(string(got), `"role":"a"`) != 600 {
		t.Errorf("a %d-byte body's input is %d bytes: %.200s", len(body), len(got), got)
	}
	big := `{"model":"m","input":[` + strings.Repeat(`{"role":"a"},`, 200_000) + `{"role":"user","content":"hi"}]}`
	if resp, answer := post(t, url+RouteResponses, big); resp.StatusCode != 413 {
		t.Errorf("a %d-byte body, 300 times the limit: %d %.200s, want 413", len(big), resp.StatusCode, answer)
	}
}

// TestResponseIDsScoped: the agent sees a responses request's response_id
// and previous_response_id scoped to the caller (core.Owner.Scope), while
// the caller sees its own resp_ id: caller A's next request naming its
// response continues A's conversation, and caller B naming A's id (leaked,
// guessed) reaches the agent as another id than A's conversation.
func TestResponseIDsScoped(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "input", Model: "m"})
	ids := func(answer string) (got struct{ ResponseID, PreviousResponseID string }) {
		t.Helper()
		in, _ := agentInput(t, RouteResponses, answer)
		var v struct {
			IDs struct {
				ResponseID         string `json:"response_id"`
				PreviousResponseID string `json:"previous_response_id"`
			}
		}
		json.Unmarshal(in, &v)
		got.ResponseID, got.PreviousResponseID = v.IDs.ResponseID, v.IDs.PreviousResponseID
		return got
	}

	_, answer := post(t, url+RouteResponses, `{"model":"m","input":"hi"}`, "Authorization", "Bearer alice")
	_, first := agentInput(t, RouteResponses, answer)
	conversation := ids(answer).ResponseID
	if !strings.HasPrefix(first, "resp_") || conversation == first || !strings.HasSuffix(conversation, "."+first) {
		t.Fatalf("A's response %q reached the agent as %q, want it scoped to A", first, conversation)
	}
	body := `{"model":"m","previous_response_id":"` + first + `","input":"again"}`
	_, answer = post(t, url+RouteResponses, body, "Authorization", "Bearer alice")
	_, second := agentInput(t, RouteResponses, answer)
	if got := ids(answer); got.PreviousResponseID != conversation || !strings.HasSuffix(got.ResponseID, "."+second) {
		t.Errorf("A continuing its response: the agent saw %+v, want previous_response_id %q", got, conversation)
	}
	_, answer = post(t, url+RouteResponses, body, "Authorization", "Bearer mallory")
	if got := ids(answer); got.PreviousResponseID == conversation || got.PreviousResponseID == first || !strings.HasSuffix(got.PreviousResponseID, "."+first) {
		t.Errorf("B naming A's response %q: the agent saw previous_response_id %q, want another id than A's %q", first, got.PreviousResponseID, conversation)
	}
}
