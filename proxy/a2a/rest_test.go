package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

// serveMounted runs the sidecar with the A2A door calling method mounted
// at /a2a on a listener it shares (proxy.Mounted, as on the platform's
// listener: every other path 404), and returns the mount's URL.
func serveMounted(t *testing.T, method string) string {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", startAgent(t))))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	door := newDoor(t, cfg, Options{Method: method, Mount: "/a2a", Card: CardInfo{Name: "Story agent", Description: "Tells stories."}})
	agentOf := dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}
	s := &proxy.Server{Config: cfg, Agent: agentOf}
	h := proxy.Mounted(http.NotFoundHandler(), []proxy.Mount{{Path: "/a2a", Claims: []config.Claim{{Path: "/a2a", Tree: true}}, Handler: s.HandlerFor(door)}})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		client.Close()
	})
	return srv.URL + "/a2a"
}

// TestJSClientREST: the A2A project's JavaScript SDK over HTTP+JSON,
// built from the card with its REST transport alone, forced onto the
// door as a 1.0 client and as a 0.3 one (its LegacyRestTransport), sends,
// streams, gets and cancels, against the door on its own listener and
// mounted: each typed error (TaskNotCancelable, TaskNotFound) read from
// the door's google.rpc.Status, a running task canceled from another
// connection while its stream is read.
func TestJSClientREST(t *testing.T) {
	modules := sdkModules(t)
	for _, where := range []string{"own listener", "mounted"} {
		t.Run(where, func(t *testing.T) {
			stream, slow := serve(t, "stream_query"), serve(t, "slow")
			if where == "mounted" {
				stream, slow = serveMounted(t, "stream_query"), serveMounted(t, "slow")
			}
			got := runNode(t, modules, "rest.mjs", stream, slow)
			streamed := `"events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","statusUpdate TASK_STATE_COMPLETED"],"text":"[hi] once upon a time{\"n\":1`
			var want []string
			for _, way := range []string{"card", "1.0", "0.3"} {
				version := "1.0"
				if way == "0.3" {
					version = "0.3"
				}
				want = append(want,
					`{"step":"`+way+`","binding":"HTTP+JSON","version":"`+version,
					`{"step":"`+way+` send","state":"TASK_STATE_COMPLETED","text":"[hi] once upon a time{\"n\":1`,
					`{"step":"`+way+` stream",`+streamed,
					`{"step":"`+way+` get","state":"TASK_STATE_COMPLETED","same":true}`,
					`{"step":"`+way+` cancel ended","error":"TaskNotCancelableError"`,
					`{"step":"`+way+` get unknown","error":"TaskNotFoundError"`)
			}
			for _, way := range []string{"card", "1.0", "0.3"} {
				want = append(want, `{"step":"`+way+` cancel running","canceled":"TASK_STATE_CANCELED","events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","statusUpdate TASK_STATE_CANCELED"]}`)
			}
			if len(got) != len(want) {
				t.Fatalf("rest.mjs printed %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			checkLines(t, got, want)
		})
	}
}

// runNode runs script of testdata/a2a with args and returns the lines it
// printed, each checked to be JSON.
func runNode(t *testing.T, modules, script string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"../../testdata/a2a/" + script}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", script, err, out, stderr.String())
	}
	t.Logf("%s:\n%s", script, out)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s printed %q", script, line)
		}
		got = append(got, line)
	}
	return got
}

var _ = bufio.NewScanner
var _ = io.ReadAll
