package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseQuestions(t *testing.T) {
	const head = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  query: {}\n"
	c, err := Parse("sidecar.yaml", []byte(head+"limits:\n  questions: {bytes: 8KiB, wait: 2m, waiting: 5}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if want := (Questions{Bytes: 8 << 10, Wait: 2 * time.Minute, Waiting: 5}); c.Limits.Questions != want {
		t.Errorf("Limits.Questions = %+v, want %+v", c.Limits.Questions, want)
	}
	d, err := Parse("sidecar.yaml", []byte(head))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if d.Limits.Questions != DefaultQuestions {
		t.Errorf("default Limits.Questions = %+v, want %+v", d.Limits.Questions, DefaultQuestions)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"questions: {bytes: 100}", "limits.questions.bytes: 100 is too small"},
		{"questions: {bytes: 1GiB}", "larger than the most allowed, 16MiB"},
		{"questions: {wait: 0}", "limits.questions.wait: must be positive"},
		{"questions: {wait: forever}", "limits.questions.wait"},
		{"questions: {waiting: 0}", "limits.questions.waiting: must be at least 1"},
		{"questions: {ask: 1}", "limits.questions.ask: unknown key"},
		{"questions: 5", "limits.questions"},
	} {
		_, err := Parse("sidecar.yaml", []byte(head+"limits:\n  "+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
