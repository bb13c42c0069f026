package adk

import (
	"encoding/json"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestContent(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{`"Paris"`, `{"parts":[{"text":"Paris"}],"role":"user"}`, ""},
		{`{"parts":[{"text":"x"}]}`, `{"parts":[{"text":"x"}],"role":"user"}`, ""},
		{`{"role":"model","parts":[{"text":"x"}]}`, `{"parts":[{"text":"x"}],"role":"model"}`, ""},
		{`{"role":"user"}`, "", "is a Content without a parts list"},
		{`{"parts":"x"}`, "", "is a Content without a parts list"},
		{`42`, "", "must be a string or a Content"},
		{`null`, "", "is required"},
		{``, "", "is required"},
	}
	for _, tt := range tests {
		got, err := content(json.RawMessage(tt.in), "message")
		if tt.wantErr != "" {
			var ie *core.InputError
			if !errors.As(err, &ie) || ie.Field != "message" || ie.Msg[:len(tt.wantErr)] != tt.wantErr {
				t.Errorf("content(%s) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("content(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestStreamingMode(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"streaming_mode":"SSE"}`, true},
		{`{"streamingMode":"sse"}`, true},
		{`{"streaming_mode":"StreamingMode.SSE"}`, true},
		{`{"streaming_mode":"NONE"}`, false},
		{`{"streaming_mode":"BIDI"}`, false},
		{`{"max_llm_calls":3}`, false},
		{`null`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := streamingMode(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("streamingMode(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestErrorWording(t *testing.T) {
	notFound := &core.StatusError{Status: 404, Detail: "Session not found: s1"}
	if err := sessionError(notFound); err.(*core.StatusError).Detail != errSessionNotFound {
		t.Errorf("sessionError(404) = %v", err)
	}
	other := &core.StatusError{Status: 500, Detail: "boom"}
	if err := sessionError(other); err != other {
		t.Errorf("sessionError(500) = %v, want it unchanged", err)
	}
	route := "PATCH /apps/{app}/users/{user}/memory"
	tests := []struct {
		err        error
		wantStatus int
		wantDetail string
	}{
		{&core.StatusError{Status: 404, Detail: "Cannot PATCH /apps/a/users/u/memory"}, 400,
			"m: the ADK api server does not serve " + route + " (it answered 404: Cannot PATCH /apps/a/users/u/memory)"},
		{&core.StatusError{Status: 405, Detail: "Method Not Allowed"}, 400,
			"m: the ADK api server does not serve " + route + " (it answered 405: Method Not Allowed)"},
		{&core.StatusError{Status: 404, Detail: "Session not found"}, 404, errSessionNotFound},
		{&core.StatusError{Status: 400, Detail: "Memory service is not configured."}, 400,
			"m needs a memory service on the ADK api server: Memory service is not configured."},
		{&core.StatusError{Status: 503, Detail: "busy"}, 503, "busy"},
	}
	for _, tt := range tests {
		var se *core.StatusError
		if !errors.As(missingRoute(tt.err, "m", route, "a memory service"), &se) || se.Status != tt.wantStatus || se.Detail != tt.wantDetail {
			t.Errorf("missingRoute(%v) = %+v, want %d %q", tt.err, se, tt.wantStatus, tt.wantDetail)
		}
	}
}
