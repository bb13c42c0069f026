package a2a

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// TestReplicasListPages: ListTasks on a replica that ran none of them
// (Redis' index) pages three tasks two a page: every id exactly once,
// the first page's nextPageToken non-empty, the last's "".
func TestReplicasListPages(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "query", "", 15*time.Second)
	b := startReplica(t, srv, agent, "query", "", 15*time.Second)
	want := map[string]bool{}
	for _, text := range []string{"one", "two", "three"} {
		want[sendOn(t, a.url, text).ID] = true
	}
	seen := map[string]int{}
	token := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("ListTasks on B does not end")
		}
		l := list(t, b.url, "", `{"pageSize":2,"pageToken":"`+token+`"}`)
		if len(l.Tasks) > 2 || l.TotalSize != 3 {
			t.Errorf("page %d on B: %d tasks, totalSize %d; want at most 2, 3", pages, len(l.Tasks), l.TotalSize)
		}
		for _, tk := range l.Tasks {
			seen[tk.ID]++
		}
		if token = *l.NextPageToken; token == "" {
			if pages != 1 {
				t.Errorf("ListTasks on B ended after %d pages, want 2", pages+1)
			}
			break
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("task %s listed %d times across the pages, want once", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the pages listed %v, want %v", seen, want)
	}
}

// TestReplicasSubscribeGap: a subscriber on another replica whose task's
// channel skips a batch (a gap in its sequence numbers: a message lost)
// is dropped, as one that lagged: its stream ends with the lag error,
// never with the events after the gap as though nothing were missing.
func TestReplicasSubscribeGap(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	b := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	var id string
	for {
		raw, ok := stream.next(t)
		if !ok {
			t.Fatal("A's stream ended before its first part")
		}
		if k, v := kind(raw); k == "task" {
			id = v
		} else if k == "artifact" {
			break
		}
	}
	resp := rpcBy(t, b.url, "", taskReq("SubscribeToTask", id))
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "data: ") {
		t.Fatalf("B's subscription: no first event (%v)", sc.Err())
	}
	// A batch far past the last one B queued: those between are lost.
	ch := b.door.shared.key("events", id)
	if err := b.store.Client().Publish(context.Background(), ch, `1000000 [{}]`).Err(); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			rest = append(rest, data)
		}
	}
	if len(rest) != 1 || !strings.Contains(rest[0], `"code":-32603`) || !strings.Contains(rest[0], "the subscriber fell more than") {
		t.Errorf("B's subscription after a gap: %q, want it to end with the lag error", rest)
	}
	agent.step <- struct{}{}
	agent.step <- struct{}{}
}
