package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// perCallerRequests is limits.per_caller.requests of TestReplicasPerCaller,
// in a minute: even, so that each replica alone sees half.
const perCallerRequests = 4

// perCallerDoors is each replica's doors, store, auth section and
// per-caller limits, after onePortMap's methods.
const perCallerDoors = `
protocols:
  a2a: {mount: /a2a, method: story, card: {name: Story agent, description: Tells stories.}}
  mcp: {mount: /mcp, methods: [ask, story, long, fail, fail_late]}
  openai: {mount: /, method: chat, model: agent}
state: {store: redis, redis: {url: "${REDIS_URL}"}}
auth: {issuer: "ISSUER", audience: "https://agent.example.com"}
limits:
  per_caller: {requests: 4, per: 1m, concurrent: 1}
`

// limitedDoor is a door TestReplicasPerCaller calls: its request for
// the caller whose token is token, and its refusal's shape.
type limitedDoor struct {
	name    string
	request func(base, token string) *http.Request
	refusal func(body []byte) bool
}

var limitedDoors = []limitedDoor{
	{"a2a (JSON-RPC)", func(base, token string) *http.Request {
		r := probeOf("a2a").Request(base+"/a2a", "story", false)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}, probeOf("a2a").Refusal},
	{"a2a (HTTP+JSON)", func(base, token string) *http.Request {
		r := a2aREST.Request(base+"/a2a", "story", false)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}, a2aREST.Refusal},
	{"mcp (JSON-RPC)", func(base, token string) *http.Request {
		r := probeOf("mcp").Request(base+"/mcp", "ask", false)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}, probeOf("mcp").Refusal},
	{"openai", func(base, token string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"agent","messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}, probeOf("openai").Refusal},
}

// limitedAnswer is an answer, read whole, and how long it took.
type limitedAnswer struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func limitedCall(t *testing.T, req *http.Request) limitedAnswer {
	t.Helper()
	start := time.Now()
	resp, err := replicaClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return limitedAnswer{resp.StatusCode, resp.Header, b, time.Since(start)}
}

// TestReplicasPerCaller (issue 31): two real `sidecar serve` replicas on
// one real Redis, an auth section and limits.per_caller of 4 a minute.
// A caller's calls, alternating between the replicas, count once for
// both: its fifth is 429 on either, in the door's shape (A2A's two
// bindings', MCP's JSON-RPC, OpenAI's), with Retry-After and the RateLimit fields, each replica
// having seen two; another caller is served on both meanwhile. Calls at
// once are counted per replica (docs/auth.md): a caller holding its one
// on a replica is refused a second there and served on the other. With
// Redis stopped each replica counts in its process, as documented: a
// caller gets its 4 on each, its fifth on one is 429, every answer
// prompt (within storeBound).
func TestReplicasPerCaller(t *testing.T) {
	srv := redistest.Start(t)
	t.Cleanup(replicaClient.CloseIdleConnections)
	p := idptest.Start(t)
	holds := t.TempDir()
	var reps []*replica
	for range 2 {
		agent := startServerOnPort(t, []string{"HOLD_DIR=" + holds}, "python3", "../../testdata/agents/replica.py")
		reps = append(reps, startReplicaWith(t, agent.url, srv.URL(), strings.ReplaceAll(perCallerDoors, "ISSUER", p.URL)))
	}
	const aud = "https://agent.example.com"
	policy := `"per-caller";q=` + strconv.Itoa(perCallerRequests) + `;w=60`

	for _, door := range limitedDoors {
		t.Run("shared by the replicas, "+door.name, func(t *testing.T) {
			alice := p.Token(t, "alice "+door.name, aud, "")
			bob := p.Token(t, "bob "+door.name, aud, "")
			for i := range perCallerRequests {
				a := limitedCall(t, door.request(reps[i%2].base, alice))
				// RateLimit's r counts the calls both replicas took.
				want := `"per-caller";r=` + strconv.Itoa(perCallerRequests-1-i) + ";"
				if a.status != http.StatusOK || door.refusal(a.body) || !strings.HasPrefix(a.header.Get("RateLimit"), want) || a.header.Get("RateLimit-Policy") != policy {
					t.Fatalf("call %d of the caller, on replica %d = %d (RateLimit %q, RateLimit-Policy %q) %s, want 200 with %s…, %s",
						i+1, i%2, a.status, a.header.Get("RateLimit"), a.header.Get("RateLimit-Policy"), a.body, want, policy)
				}
			}
			for i, r := range reps {
				if n := servedLines(r, "alice "+door.name, perCallerRequests/2); n != perCallerRequests/2 {
					t.Errorf("replica %d logged %d served calls of the caller, want %d: half of them each", i, n, perCallerRequests/2)
				}
				a := limitedCall(t, door.request(r.base, alice))
				retry, _ := strconv.Atoi(a.header.Get("Retry-After"))
				if a.status != http.StatusTooManyRequests || !door.refusal(a.body) || !strings.Contains(string(a.body), "limits.per_caller") ||
					retry < 1 || retry > 60 || !strings.HasPrefix(a.header.Get("RateLimit"), `"per-caller";r=0;`) || a.header.Get("RateLimit-Policy") != policy {
					t.Errorf("the caller's call over its %d, on replica %d (which saw %d) = %d (Retry-After %q, RateLimit %q, RateLimit-Policy %q) %s, want 429 in the door's shape with the three fields",
						perCallerRequests, i, perCallerRequests/2, a.status, a.header.Get("Retry-After"), a.header.Get("RateLimit"), a.header.Get("RateLimit-Policy"), a.body)
				}
				if a := limitedCall(t, door.request(r.base, bob)); a.status != http.StatusOK || door.refusal(a.body) {
					t.Errorf("another caller on replica %d = %d %s, want served", i, a.status, a.body)
				}
			}
		})
	}

	t.Run("calls at once, per replica", func(t *testing.T) {
		dave := p.Token(t, "dave", aud, "")
		chat := func(base, message string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"agent","messages":[{"role":"user","content":"`+message+`"}]}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer "+dave)
			return r
		}
		held := make(chan limitedAnswer, 1)
		go func() {
			resp, err := replicaClient.Do(chat(reps[0].base, "hold-dave"))
			if err != nil {
				held <- limitedAnswer{body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			held <- limitedAnswer{status: resp.StatusCode, body: b}
		}()
		for deadline := time.Now().Add(storeBound); ; time.Sleep(20 * time.Millisecond) {
			var got struct{ Holding bool }
			if getJSON(t, reps[0].agent+"/holding/dave", &got); got.Holding {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the agent of replica 0 does not hold dave's call %v after it was sent", storeBound)
			}
		}
		a := limitedCall(t, chat(reps[0].base, "hi"))
		if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "1" || !probeOf("openai").Refusal(a.body) || !strings.Contains(string(a.body), "at once") {
			t.Errorf("a second call at once on the replica holding the caller's one = %d (Retry-After %q) %s, want 429 in OpenAI's shape, Retry-After 1", a.status, a.header.Get("Retry-After"), a.body)
		}
		if a := limitedCall(t, chat(reps[1].base, "hi")); a.status != http.StatusOK {
			t.Errorf("a second call at once on the other replica = %d %s, want served: calls at once are counted per replica", a.status, a.body)
		}
		release(t, reps, "dave")
		if a := <-held; a.status != http.StatusOK { // replicaClient's timeout bounds it
			t.Errorf("the held call, released = %d %s, want 200", a.status, a.body)
		}
	})

	t.Run("redis down", func(t *testing.T) {
		srv.Stop()
		carol := p.Token(t, "carol", aud, "")
		erin := p.Token(t, "erin", aud, "")
		door := limitedDoors[len(limitedDoors)-1] // OpenAI's: it needs no store besides
		prompt := func(what string, a limitedAnswer) {
			t.Helper()
			if a.took > storeBound {
				t.Errorf("%s took %v with Redis down, want an answer within %v", what, a.took, storeBound)
			}
		}
		for i, r := range reps {
			for n := range perCallerRequests {
				a := limitedCall(t, door.request(r.base, carol))
				prompt("a call", a)
				if a.status != http.StatusOK || door.refusal(a.body) || a.header.Get("RateLimit-Policy") != policy {
					t.Fatalf("call %d of the caller on replica %d with Redis down = %d %s, want served: an outage never refuses by itself", n+1, i, a.status, a.body)
				}
			}
			a := limitedCall(t, door.request(r.base, carol))
			prompt("the call over the limit", a)
			if a.status != http.StatusTooManyRequests || !door.refusal(a.body) || a.header.Get("Retry-After") == "" || !strings.HasPrefix(a.header.Get("RateLimit"), `"per-caller";r=0;`) {
				t.Errorf("the caller's call over its %d on replica %d with Redis down = %d (Retry-After %q, RateLimit %q) %s, want 429: counted in the replica's process",
					perCallerRequests, i, a.status, a.header.Get("Retry-After"), a.header.Get("RateLimit"), a.body)
			}
			if a := limitedCall(t, door.request(r.base, erin)); a.status != http.StatusOK {
				t.Errorf("another caller on replica %d with Redis down = %d %s, want served", i, a.status, a.body)
			}
			if r.log.find("per-caller limit counted in the process") == "" {
				t.Errorf("replica %d did not log that it counts in its process", i)
			}
		}
	})
}

// servedLines is how many call lines of r say it served caller with 200,
// once they are want or storeBound passed (a line is written as its
// answer ends: the caller may read the answer first).
func servedLines(r *replica, caller string, want int) int {
	for deadline := time.Now().Add(storeBound); ; time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, line := range strings.Split(r.log.String(), "\n") {
			if strings.Contains(line, `"message":"call"`) && strings.Contains(line, `"caller":"`+caller+`"`) && strings.Contains(line, `"status":200,`) {
				n++
			}
		}
		if n == want || time.Now().After(deadline) {
			return n
		}
	}
}
