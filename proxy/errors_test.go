package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// errorLineFields are the parts of a final error line.
type errorLineFields struct {
	code                    int
	message, status, reason string
	domain                  string
}

// parseErrorLine reads a final line in Google's error model (AIP-193),
// failing the test if it is not one: "error" the first and only key, an
// integer code, a message, a status, and one ErrorInfo.
func parseErrorLine(t *testing.T, line string) errorLineFields {
	t.Helper()
	var top map[string]json.RawMessage
	if !strings.HasPrefix(line, `{"error":{`) || json.Unmarshal([]byte(line), &top) != nil || len(top) != 1 {
		t.Fatalf("final line %s is not {\"error\": {…}}", line)
	}
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
		Status  string  `json:"status"`
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
			Domain string `json:"domain"`
		} `json:"details"`
	}
	if err := json.Unmarshal(top["error"], &e); err != nil || e.Code == nil || e.Message == nil || e.Status == "" ||
		len(e.Details) != 1 || e.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" {
		t.Fatalf("final line %s is not {\"error\":{\"code\":…,\"message\":…,\"status\":…,\"details\":[ErrorInfo]}} (%v)", line, err)
	}
	return errorLineFields{*e.Code, *e.Message, e.Status, e.Details[0].Reason, e.Details[0].Domain}
}

// TestErrorLines: a stream's final line is Google's error model (AIP-193)
// with "error" first, an integer code, the canonical status and the
// sidecar's reason in an ErrorInfo; an agent's own error already in that
// shape passes on unchanged, any other becomes 500 INTERNAL with the
// agent's message and code.
func TestErrorLines(t *testing.T) {
	google := `{"code":429,"message":"quota \"x\" exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"QUOTA","domain":"agent.example","metadata":{"k":"v"}}]}`
	info := func(reason string) string {
		return `"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"sidecar"}]}}`
	}
	tests := []struct {
		name, contentType, body string
		config                  string
		want                    string
	}{
		{"idle timeout", "application/x-ndjson", "{\"i\":0}\n", "timeouts: {idle: 200ms}\n",
			`{"error":{"code":504,"message":"agent sent nothing for 200ms","status":"DEADLINE_EXCEEDED",` + info("TIMEOUT")},
		{"record too large", "application/x-ndjson", "{\"i\":0}\n\"" + strings.Repeat("x", 2048) + "\"\n", "limits: {record_bytes: 1024}\n",
			`{"error":{"code":500,"message":"agent record exceeds the record size limit","status":"INTERNAL",` + info("RECORD_TOO_LARGE")},
		{"agent error without a code", "application/x-ndjson", "{\"i\":0}\n{\"error\":\"boom\"}\n", "",
			`{"error":{"code":500,"message":"boom","status":"INTERNAL",` + info("AGENT_ERROR")},
		{"agent error with its code", "text/event-stream", "data: {\"i\":0}\n\nevent: error\ndata: {\"code\":\"modelOverloaded\",\"message\":\"try later\"}\n\n", "",
			`{"error":{"code":500,"message":"try later","status":"INTERNAL",` + info("MODEL_OVERLOADED")},
		{"agent error with a numeric code", "application/x-ndjson", "{\"i\":0}\n{\"error\":{\"code\":429,\"message\":\"slow down\"}}\n", "",
			`{"error":{"code":500,"message":"slow down","status":"INTERNAL",` + info("AGENT_ERROR_429")},
		{"agent error in Google's shape, a record", "application/x-ndjson", "{\"i\":0}\n{\"error\": " + google + "}\n", "",
			`{"error":` + google + `}`},
		{"agent error in Google's shape, an SSE error event", "text/event-stream", "data: {\"i\":0}\n\nevent: error\ndata: " + google + "\n\n", "",
			`{"error":` + google + `}`},
		{"agent error with a status that is not canonical", "application/x-ndjson", "{\"i\":0}\n{\"error\":{\"code\":500,\"message\":\"m\",\"status\":\"OOPS\"}}\n", "",
			`{"error":{"code":500,"message":"m","status":"INTERNAL",` + info("AGENT_ERROR_500")},
		{"agent error in Google's shape with a string code", "application/x-ndjson", "{\"i\":0}\n{\"error\":{\"code\":\"UNAVAILABLE\",\"message\":\"m\",\"status\":\"UNAVAILABLE\"}}\n", "",
			`{"error":{"code":500,"message":"m","status":"INTERNAL",` + info("UNAVAILABLE")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				w.Header().Set("Content-Type", tt.contentType)
				io.WriteString(w, tt.body)
				http.NewResponseController(w).Flush()
				if strings.Contains(tt.config, "idle") {
					<-r.Context().Done()
				}
			}))
			defer agent.Close()
			defer agent.CloseClientConnections()
			h := newHarness(t, agent.URL, tt.config+oneMethodConfig)
			r := h.stream("stream_query", `{}`)
			got := lines(t, r.body)
			if r.status != 200 || len(got) != 2 || got[0] != `{"i":0}` {
				t.Fatalf("reply = %d %q, want the record and one error line", r.status, got)
			}
			if got[1] != tt.want {
				t.Errorf("final line =\n%s\nwant\n%s", got[1], tt.want)
			}
		})
	}
}

// TestReasonToken: an agent's own code becomes a valid ErrorInfo reason.
func TestReasonToken(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Z][A-Z0-9_]+[A-Z0-9]$`)
	tests := []struct{ in, want string }{
		{"timeout", "TIMEOUT"},
		{"modelOverloaded", "MODEL_OVERLOADED"},
		{"model-overloaded", "MODEL_OVERLOADED"},
		{"Model Overloaded!", "MODEL_OVERLOADED"},
		{"HTTPError", "HTTPERROR"},
		{"v2Error", "V2_ERROR"},
		{"429", "AGENT_ERROR_429"},
		{"-1", "AGENT_ERROR_1"},
		{"x", "AGENT_ERROR_X"},
		{"", "AGENT_ERROR"},
		{"!!!", "AGENT_ERROR"},
		{"_a_", "AGENT_ERROR_A"},
		{"ünïcode", "N_CODE"},
		{"a\nb", "A_B"},
		{strings.Repeat("ab", 100), strings.Repeat("AB", 31) + "A"},
		{strings.Repeat("a_", 100), strings.TrimSuffix(strings.Repeat("A_", 32), "_")},
		{"1" + strings.Repeat("z", 100), "AGENT_ERROR_1" + strings.Repeat("Z", 50)},
	}
	for _, tt := range tests {
		got := reasonToken(tt.in)
		if got != tt.want {
			t.Errorf("reasonToken(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > 63 || !valid.MatchString(got) {
			t.Errorf("reasonToken(%q) = %q, not a valid reason", tt.in, got)
		}
	}
}

// TestReasonsTable: every reason's line is a code and status Google's
// error model pairs, and the README's Errors table shows each one as the
// code's table does.
func TestReasonsTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
			if _, dup := rows[name]; !dup {
				rows[name] = l
			}
		}
	}
	for reason, r := range reasons {
		row, ok := rows[reason]
		if !ok {
			t.Errorf("README's Errors table has no row for %s", reason)
			continue
		}
		cells := strings.Split(row, "|")
		if len(cells) != 6 {
			t.Errorf("README row %q does not have 4 cells", row)
			continue
		}
		if r.status != 0 && !strings.Contains(cells[2], strconv.Itoa(r.status)) {
			t.Errorf("README row for %s: before the first byte %q, want %d", reason, cells[2], r.status)
		}
		if r.line.code != 0 && r.line.code != 499 && !strings.Contains(cells[3], fmt.Sprintf("%d `%s`", r.line.code, r.line.status)) {
			t.Errorf("README row for %s: line %q, want %d `%s`", reason, cells[3], r.line.code, r.line.status)
		}
		if !strings.Contains(cells[4], "`"+string(r.outcome)+"`") {
			t.Errorf("README row for %s: outcome %q, want %s", reason, cells[4], r.outcome)
		}
		if r.line.code != 0 && rpcOfStatus(r.line.code) != r.line {
			t.Errorf("reason %s: line %v is not a pair of Google's error model (%v)", reason, r.line, rpcOfStatus(r.line.code))
		}
	}
}
