package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// scrape is the metrics' text exposition, as Prometheus reads it.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCallSeries: each call adds to the series of its own labels, and
// only to them: calls that differ in one label (method map entry, route,
// outcome, protocol, stream or not) are counted apart, however often the
// same labels came before (their lookups are resolved once).
func TestCallSeries(t *testing.T) {
	m := New("platform", "a2a")
	calls := []Call{
		{Method: "query", Route: "/u", Outcome: OK, Protocol: "platform", Duration: time.Millisecond, Bytes: 10},
		{Method: "other", Route: "/u", Outcome: OK, Protocol: "platform", Duration: time.Millisecond, Bytes: 10},
		{Method: "query", Route: "/s", Outcome: OK, Protocol: "platform", Duration: time.Millisecond, Bytes: 10, Stream: true, Records: 3, FirstLine: time.Millisecond},
		{Method: "query", Route: "/u", Outcome: AgentError, Protocol: "platform", Duration: time.Millisecond, Bytes: 10},
		{Method: "query", Route: "/u", Outcome: OK, Protocol: "a2a", Duration: time.Millisecond, Bytes: 10},
		{Method: "query", Route: "/u", Outcome: OK, Duration: time.Millisecond, Bytes: 10},
		{Method: "query", Route: "/u", Outcome: Timeout, Phase: "idle", Protocol: "platform", Duration: time.Millisecond, Bytes: 10, Retries: 2},
	}
	for i, c := range calls {
		for range i + 1 { // call i, i+1 times
			m.Call(c)
		}
	}
	out := scrape(t, m)
	for _, want := range []string{
		`sidecar_calls_total{class_method="query",outcome="ok",route="/u"} 12`, // calls 0, 4 and 5
		`sidecar_calls_total{class_method="other",outcome="ok",route="/u"} 2`,
		`sidecar_calls_total{class_method="query",outcome="ok",route="/s"} 3`,
		`sidecar_calls_total{class_method="query",outcome="agent_error",route="/u"} 4`,
		`sidecar_calls_total{class_method="query",outcome="timeout",route="/u"} 7`,
		`sidecar_protocol_calls_total{outcome="ok",protocol="platform"} 6`, // calls 0, 1 and 2
		`sidecar_protocol_calls_total{outcome="ok",protocol="a2a"} 5`,
		`sidecar_protocol_calls_total{outcome="agent_error",protocol="platform"} 4`,
		`sidecar_protocol_calls_total{outcome="timeout",protocol="platform"} 7`,
		`sidecar_response_bytes_total{class_method="query",route="/u"} 230`, // 23 calls: 0, 3, 4, 5 and 6
		`sidecar_call_duration_seconds_count{class_method="query",route="/u"} 23`,
		`sidecar_call_duration_seconds_count{class_method="query",route="/s"} 3`,
		`sidecar_records_total{class_method="query"} 9`,
		`sidecar_time_to_first_line_seconds_count{class_method="query"} 3`,
		`sidecar_stream_ends_total{reason="ok"} 3`,
		`sidecar_timeouts_total{class_method="query",phase="idle",route="/u"} 7`,
		`sidecar_retries_total{class_method="query"} 14`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, `sidecar_records_total{class_method="other"}`) || strings.Contains(out, `sidecar_stream_ends_total{reason="agent_error"}`) {
		t.Errorf("a unary call added to a stream's series:\n%s", out)
	}
}

// BenchmarkCall is the metrics of one finished unary call.
func BenchmarkCall(b *testing.B) {
	m := New("platform")
	c := Call{Method: "query", Route: "/api/reasoning_engine", Outcome: OK, Protocol: "platform", Duration: time.Millisecond, Bytes: 100, Records: 1}
	b.ReportAllocs()
	for b.Loop() {
		m.Call(c)
	}
}
