package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
