package upstream

import (
	"errors"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestAgentErrorRaw: an error object keeps its compact JSON, so the proxy
// can pass an error already in Google's shape on as it is; other errors
// have none.
func TestAgentErrorRaw(t *testing.T) {
	google := `{"code":503,"message":"model overloaded","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"OVERLOADED","domain":"agent.example"}]}`
	tests := []struct {
		format Format
		in     string
		want   string
	}{
		{FormatLines, `{"error": ` + google + "}\n", google},
		{FormatSSE, "data: {\"error\":" + google + "}\n\n", google},
		{FormatSSE, "event: error\ndata: " + google + "\n\n", google},
		{FormatJSON, `{"error": {"message": "m", "code": "C"}}`, `{"message":"m","code":"C"}`},
		{FormatLines, `{"error":"boom"}`, ""},
		{FormatSSE, "event: error\ndata: plain\n\n", ""},
		{FormatLines, `{"error":[1]}`, ""},
	}
	for _, tt := range tests {
		_, err := deframe(tt.format, strings.NewReader(tt.in), 0)
		var ae *core.AgentError
		if !errors.As(err, &ae) || ae.Raw != tt.want {
			t.Errorf("deframe(%s, %q) = %#v, want Raw %q", tt.format, tt.in, err, tt.want)
		}
	}
}
