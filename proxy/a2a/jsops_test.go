package a2a

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJSClientOps: the A2A project's JavaScript SDK, as a 1.0 client and
// as a 0.3 one, follows a running task from another request
// (resubscribeTask: SubscribeToTask, tasks/resubscribe): the task as it
// is, then the part the agent sends after, then the completed status,
// then the end; subscribing to the ended task is UnsupportedOperation in
// 1.0, the task alone in 0.3; and lists the tasks (ListTasks, with
// artifacts), which 0.3 has no method for (the SDK says so itself); and
// all of it again through the HTTP+JSON binding (GET /tasks,
// /tasks/{id}:subscribe), 1.0 and 0.3; on the door's own listener and
// mounted.
func TestJSClientOps(t *testing.T) {
	for _, mount := range []string{"", "/a2a"} {
		name := "own listener"
		if mount != "" {
			name = "mounted"
		}
		t.Run(name, func(t *testing.T) { jsClientOps(t, mount) })
	}
}

// jsClientOps is TestJSClientOps with the door at mount ("": on its own
// listener).
func jsClientOps(t *testing.T, mount string) {
	modules := sdkModules(t)
	release := make(chan struct{}, 4)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"text\":\"one \"}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"text\":\"two\"}\n\n")
	}))
	defer agent.Close()
	url, _, _ := serveAt(t, "gated", gatedMap, agent.URL, mount)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/a2a/ops.mjs", url)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var got []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		got = append(got, sc.Text())
		if strings.Contains(sc.Text(), ` subscribed"`) {
			release <- struct{}{} // the agent's next part, once the client has subscribed
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ops.mjs: %v\n%s\n%s", err, strings.Join(got, "\n"), stderr.String())
	}
	t.Logf("ops.mjs:\n%s", strings.Join(got, "\n"))
	want := []string{
		`{"step":"1.0 subscribed","first":"task TASK_STATE_WORKING one "}`,
		`{"step":"1.0 subscription","events":["artifactUpdate two append","statusUpdate TASK_STATE_COMPLETED"]}`,
		`{"step":"1.0 subscribe ended","error":`,
		`{"step":"1.0 list","tasks":["this TASK_STATE_COMPLETED one two"],"next":"","total":1}`,
		`{"step":"0.3 subscribed","first":"task TASK_STATE_WORKING one "}`,
		`{"step":"0.3 subscription","events":["artifactUpdate two append","statusUpdate TASK_STATE_COMPLETED"]}`,
		`{"step":"0.3 subscribe ended","events":["task TASK_STATE_COMPLETED one two"]}`,
		`{"step":"0.3 list","error":"`,
		`{"step":"1.0 REST subscribed","first":"task TASK_STATE_WORKING one "}`,
		`{"step":"1.0 REST subscription","events":["artifactUpdate two append","statusUpdate TASK_STATE_COMPLETED"]}`,
		`{"step":"1.0 REST subscribe ended","error":`,
		`{"step":"1.0 REST list","tasks":["this TASK_STATE_COMPLETED one two","other TASK_STATE_COMPLETED one two","other TASK_STATE_COMPLETED one two"],"next":"","total":3}`,
		`{"step":"0.3 REST subscribed","first":"task TASK_STATE_WORKING one "}`,
		// No "append": the SDK's 0.3 REST transport drops the field the
		// door sends (its FromProto.taskArtifactUpdateEvent copies
		// lastChunk, not append).
		`{"step":"0.3 REST subscription","events":["artifactUpdate two","statusUpdate TASK_STATE_COMPLETED"]}`,
		`{"step":"0.3 REST subscribe ended","events":["task TASK_STATE_COMPLETED one two"]}`,
		`{"step":"0.3 REST list","error":"`,
	}
	if len(got) != len(want) {
		t.Fatalf("ops.mjs printed %d lines, want %d", len(got), len(want))
	}
	checkLines(t, got, want)
	if !strings.Contains(got[2], "terminal state") || !strings.Contains(got[10], "terminal state") {
		t.Errorf("1.0 SubscribeToTask of the ended task: %s, want the door's UnsupportedOperation", got[2])
	}
}
