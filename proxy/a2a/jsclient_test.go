package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// sdkModules is @a2a-js/sdk's node_modules, as `make deps` installed it
// (testdata/a2a/install.sh, into ${SIDECAR_CACHE:-<repo>/.cache}/a2a).
func sdkModules(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the A2A SDK's client")
	}
	return deps.NPM(t, "a2a")
}

// TestJSClient: the A2A project's JavaScript SDK, as a 1.0 client (its
// default, picking the card's 1.0 interface) and as a 0.3 one, fetches
// the card, sends a message, streams one, gets the task and fails to
// cancel it, ended (TaskNotCancelable), against the
// sidecar in front of a streaming agent and a failing one.
func TestJSClient(t *testing.T) {
	got := runClient(t, serve(t, "stream_query"), serve(t, "fail"))
	stream := `"events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","statusUpdate TASK_STATE_COMPLETED"]`
	failed := `"events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","statusUpdate TASK_STATE_FAILED"],"text":"partial","message":"the model is overloaded"`
	want := []string{
		`{"step":"card","name":"Story agent","streaming":true,"interfaces":["JSONRPC 1.0","JSONRPC 0.3","HTTP+JSON 1.0","HTTP+JSON 0.3"]}`,
		`{"step":"version","version":"1.0"}`,
		`{"step":"1.0 send","state":"TASK_STATE_COMPLETED","text":"[hi] once upon a time{\"n\":1`,
		`{"step":"1.0 stream",` + stream,
		`{"step":"1.0 get","state":"TASK_STATE_COMPLETED","same":true}`,
		`{"step":"1.0 cancel","error":"`,
		`{"step":"version","version":"0.3`,
		`{"step":"0.3 send","state":"TASK_STATE_COMPLETED","text":"[hi] once upon a time{\"n\":1`,
		`{"step":"0.3 stream",` + stream,
		`{"step":"0.3 get","state":"TASK_STATE_COMPLETED","same":true}`,
		`{"step":"0.3 cancel","error":"`,
		`{"step":"card","name":"Story agent","streaming":true,"interfaces":["JSONRPC 1.0","JSONRPC 0.3","HTTP+JSON 1.0","HTTP+JSON 0.3"]}`,
		`{"step":"version","version":"1.0"}`,
		`{"step":"1.0 send","state":"TASK_STATE_FAILED","text":"partial","message":"the model is overloaded"}`,
		`{"step":"1.0 stream",` + failed,
		`{"step":"1.0 get","state":"TASK_STATE_FAILED","same":true}`,
		`{"step":"1.0 cancel","error":"`,
		`{"step":"version","version":"0.3`,
		`{"step":"0.3 send","state":"TASK_STATE_FAILED","text":"partial","message":"the model is overloaded"}`,
		`{"step":"0.3 stream",` + failed,
		`{"step":"0.3 get","state":"TASK_STATE_FAILED","same":true}`,
		`{"step":"0.3 cancel","error":"`,
	}
	checkLines(t, got, want)
}

// TestJSClientEmitText: behind a method with emit: text, whose stream the
// mapping stage ends with its end record, the SDK's send, stream and get
// show the text alone: the end record is no part, no data part's JSON.
func TestJSClientEmitText(t *testing.T) {
	got := runClient(t, serve(t, "story"), serve(t, "fail"))
	stream := `"events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","statusUpdate TASK_STATE_COMPLETED"],"text":"[hi] once upon a time","message":""}`
	var want []string
	for _, v := range []string{"1.0", "0.3"} {
		want = append(want, `{"step":"version","version":"`+v,
			`{"step":"`+v+` send","state":"TASK_STATE_COMPLETED","text":"[hi] once upon a time","message":""}`,
			`{"step":"`+v+` stream",`+stream,
			`{"step":"`+v+` get","state":"TASK_STATE_COMPLETED","same":true}`,
			`{"step":"`+v+` cancel","error":"`)
	}
	checkLines(t, got[1:11], want)
}

// runClient runs client.mjs against a streaming agent's door and a failing
// one's and returns the lines it printed, each checked to be JSON.
func runClient(t *testing.T, streamURL, failURL string) []string {
	t.Helper()
	modules := sdkModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/a2a/client.mjs", streamURL, failURL)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("client.mjs:\n%s", out)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("client.mjs printed %q", line)
		}
		got = append(got, line)
	}
	if len(got) != 22 {
		t.Fatalf("client.mjs printed %d lines, want 22:\n%s", len(got), out)
	}
	return got
}

// checkLines checks that each line of got begins with its line of want.
func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, got[i], want[i])
		}
	}
}
