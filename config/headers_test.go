package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFaultKeys(t *testing.T) {
	t.Setenv("SIDECAR_TEST_TOKEN", "s3cret")
	c, err := Parse("sidecar.yaml", []byte(`
upstream: {url: "http://127.0.0.1:8000"}
limits: {concurrency: 9, queue: 20, queue_timeout: 2s, header_bytes: 8KiB, header_timeout: 3s, body_timeout: 4s}
admin: {listen: "127.0.0.1:9090"}
headers:
  forward: [authorization, X-Tenant]
  set: {X-Api-Key: "Bearer ${SIDECAR_TEST_TOKEN}", X-Static: plain}
methods:
  query: {idempotent: true}
  other: {}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	l := c.Limits
	if l.Concurrency != 9 || l.Queue != 20 || l.QueueTimeout != 2*time.Second || l.HeaderBytes != 8<<10 || l.HeaderTimeout != 3*time.Second || l.BodyTimeout != 4*time.Second {
		t.Errorf("Limits = %+v", l)
	}
	if c.Admin.Listen != "127.0.0.1:9090" {
		t.Errorf("Admin.Listen = %q", c.Admin.Listen)
	}
	if want := []string{"Authorization", "X-Tenant"}; !reflect.DeepEqual(c.Headers.Forward, want) {
		t.Errorf("Forward = %v, want %v", c.Headers.Forward, want)
	}
	if got := c.Headers.Set["X-Api-Key"]; got != "Bearer s3cret" {
		t.Errorf("Set[X-Api-Key] = %q", got)
	}
	if !c.Lookup("query", false).Idempotent || c.Lookup("other", false).Idempotent {
		t.Errorf("idempotent not read per method")
	}
	// The expanded map keeps the reference, never the secret.
	if out := string(c.Expanded()); strings.Contains(out, "s3cret") || !strings.Contains(out, "${SIDECAR_TEST_TOKEN}") {
		t.Errorf("Expanded() leaks or loses the secret reference:\n%s", out)
	}
}

func TestParseFaultKeyProblems(t *testing.T) {
	_, err := Parse("sidecar.yaml", []byte(`upstream: {url: "http://127.0.0.1:8000"}
limits: {concurrency: -1, queue_timeout: 0s, body_timeout: 0}
admin: {listen: ":8080"}
headers:
  forward: [Host, "bad name", Content-Encoding, x-sidecar-hop]
  set: {X-Key: "${SIDECAR_SURELY_UNSET_VAR}", Connection: close, content-language: en, User-Agent: ok}
methods:
  query: {idempotent: maybe}
`))
	want := []string{
		`sidecar.yaml:2: limits.concurrency: "-1" is not a whole number ≥ 0`,
		`sidecar.yaml:2: limits.queue_timeout: must be positive`,
		`sidecar.yaml:2: limits.body_timeout: must be positive`,
		`sidecar.yaml:3: admin.listen: ":8080" is the public port: metrics must be served elsewhere`,
		`sidecar.yaml:5: headers.forward: Host is managed by the sidecar and cannot be forwarded or set`,
		`sidecar.yaml:5: headers.forward: "bad name" is not a valid header name`,
		`sidecar.yaml:5: headers.forward: Content-* headers are managed by the sidecar and cannot be forwarded or set`,
		`sidecar.yaml:5: headers.forward: X-Sidecar-* headers are managed by the sidecar and cannot be forwarded or set`,
		`sidecar.yaml:6: headers.set.X-Key: environment variable SIDECAR_SURELY_UNSET_VAR is not set`,
		`sidecar.yaml:6: headers.set.Connection: Connection is managed by the sidecar and cannot be forwarded or set`,
		`sidecar.yaml:6: headers.set.content-language: Content-* headers are managed by the sidecar and cannot be forwarded or set`,
		`sidecar.yaml:8: methods.query.idempotent: "maybe" is not true or false`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Parse error =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

// TestHopHeadersAnyCase: the connection-level headers cannot be forwarded
// or set however the file spells them.
func TestHopHeadersAnyCase(t *testing.T) {
	for _, name := range []string{"upgrade", "te", "connection", "keep-alive", "proxy-connection", "trailer", "transfer-encoding", "host", "UPGRADE", "tE"} {
		for _, yaml := range []string{
			"headers: {forward: [" + name + "]}\nmethods: {q: {}}\n",
			"headers: {set: {" + name + ": x}}\nmethods: {q: {}}\n",
			"methods: {q: {headers: {set: {" + name + ": x}}}}\n",
		} {
			_, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\n"+yaml))
			if err == nil || !strings.Contains(err.Error(), "is managed by the sidecar and cannot be forwarded or set") {
				t.Errorf("Parse(%q) = %v, want %s refused", yaml, err, name)
			}
		}
	}
}
