package a2a

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestMemoryPerAnswer: the real sidecar process, in front of an agent
// streaming a 30 MB answer in 30,000 records, answers message/send and
// message/stream in both versions with the answer byte for byte, and its
// peak resident memory for that one call (a fresh process each) is at
// most twice the answer plus 30 MB: the task keeps one copy of the
// artifact, and message/send's answer is written from it. Three at once
// stay within three times that.
func TestMemoryPerAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 30 MB answer through the sidecar binary")
	}
	bin := doortest.BuildSidecar(t)
	agent := doortest.StartBigReply(t)
	want := doortest.BigReply(doortest.BigAnswer, doortest.BigPiece)
	yaml := fmt.Sprintf(`upstream: {url: %q}
protocols:
  a2a: {listen: "127.0.0.1:0", method: answer}
methods:
  answer: {mode: stream, call: POST /answer/%d/%d, emit: text}
`, agent, doortest.BigAnswer, doortest.BigPiece)
	tests := []struct {
		name    string
		version string
		method  string
		calls   int
	}{
		{"message/send", "", "message/send", 1},
		{"message/stream", "", "message/stream", 1},
		{"SendMessage", "1.0", "SendMessage", 1},
		{"SendStreamingMessage", "1.0", "SendStreamingMessage", 1},
		{"message/send x3", "", "message/send", 3},
		{"message/stream x3", "", "message/stream", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := doortest.StartSidecar(t, bin, yaml, Name)
			url := "http://" + p.Addr[Name] + "/"
			p.CheckPeakPerAnswer(t, tt.calls, want, func() (string, error) { return bigCall(url, tt.version, tt.method) })
		})
	}
}

// bigResult is what bigCall reads of a result: a Task (0.3) or its 1.0
// wrapper, or a stream's artifact-update and status-update (0.3) or their
// wrappers.
type bigResult struct {
	Kind      string
	Status    struct{ State string }
	Artifacts []bigArtifact
	Artifact  bigArtifact
	Task      *bigResult
	// 1.0's stream events.
	ArtifactUpdate *bigResult
	StatusUpdate   *bigResult
}

type bigArtifact struct{ Parts []struct{ Text string } }

// bigCall sends one message to the door at url and returns the answer's
// text: the task's artifact (message/send), or its artifact-updates'
// parts, in order (message/stream), the task completed.
func bigCall(url, version, method string) (string, error) {
	body := send0("1", method, "go")
	if version == "1.0" {
		body = send1("1", method, "go")
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return "", fmt.Errorf("%s: %s %s", method, resp.Status, b)
	}
	var text strings.Builder
	state := ""
	read := func(data []byte) error {
		var r struct {
			Result *bigResult
			Error  json.RawMessage
		}
		if err := json.Unmarshal(data, &r); err != nil || r.Result == nil {
			return fmt.Errorf("%s: reading %.200s: %v", method, data, err)
		}
		res := r.Result
		for _, inner := range []*bigResult{res.Task, res.ArtifactUpdate, res.StatusUpdate} {
			if inner != nil {
				res = inner
			}
		}
		for _, a := range res.Artifacts {
			for _, p := range a.Parts {
				text.WriteString(p.Text)
			}
		}
		for _, p := range res.Artifact.Parts {
			text.WriteString(p.Text)
		}
		state = res.Status.State
		return nil
	}
	if !strings.HasSuffix(method, "tream") && !strings.HasSuffix(method, "StreamingMessage") {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if err := read(data); err != nil {
			return "", err
		}
	} else {
		r := bufio.NewReaderSize(resp.Body, 1<<16)
		for {
			line, err := r.ReadString('\n')
			if err == io.EOF && line == "" {
				break
			}
			if err != nil {
				return "", fmt.Errorf("reading the stream: %w", err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: "); ok {
				if err := read([]byte(data)); err != nil {
					return "", err
				}
			}
		}
	}
	if state != "completed" && state != "TASK_STATE_COMPLETED" {
		return "", fmt.Errorf("%s: the task ended %q", method, state)
	}
	return text.String(), nil
}
