package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestTraceFields(t *testing.T) {
	tests := []struct {
		name, traceparent, cloud, project string
		want                              map[string]any
	}{
		{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "my-proj",
			map[string]any{"logging.googleapis.com/trace": "projects/my-proj/traces/0af7651916cd43dd8448eb211c80319c",
				"logging.googleapis.com/spanId": "b7ad6b7169203331", "logging.googleapis.com/trace_sampled": true}},
		{"no project", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "", "",
			map[string]any{"logging.googleapis.com/trace": "0af7651916cd43dd8448eb211c80319c",
				"logging.googleapis.com/spanId": "b7ad6b7169203331", "logging.googleapis.com/trace_sampled": false}},
		{"cloud trace context", "", "105445aa7843bc8bf206b12000100000/1;o=1", "p",
			map[string]any{"logging.googleapis.com/trace": "projects/p/traces/105445aa7843bc8bf206b12000100000",
				"logging.googleapis.com/spanId": "0000000000000001", "logging.googleapis.com/trace_sampled": true}},
		{"invalid traceparent falls back", "00-zz-yy-01", "105445aa7843bc8bf206b12000100000/2", "",
			map[string]any{"logging.googleapis.com/trace": "105445aa7843bc8bf206b12000100000",
				"logging.googleapis.com/spanId": "0000000000000002", "logging.googleapis.com/trace_sampled": false}},
		{"all-zero id", "00-00000000000000000000000000000000-b7ad6b7169203331-01", "", "", map[string]any{}},
		{"none", "", "", "p", map[string]any{}},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.traceparent != "" {
			h.Set("Traceparent", tt.traceparent)
		}
		if tt.cloud != "" {
			h.Set("X-Cloud-Trace-Context", tt.cloud)
		}
		got := map[string]any{}
		for _, f := range traceFields(h, tt.project) {
			if f.String != "" {
				got[f.Key] = f.String
			} else {
				got[f.Key] = f.Integer == 1
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: traceFields = %v, want %v", tt.name, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tt.name, k, got[k], v)
			}
		}
	}
}

// FuzzCallerSpan: any traceparent, tracestate and X-Cloud-Trace-Context
// give a valid parent or none, never a panic; a valid one is remote and
// carries the trace id one of the headers named.
func FuzzCallerSpan(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x", "")
	f.Add("", "", "105445aa7843bc8bf206b12000100000/1;o=1")
	f.Add("00-zz-yy-01", "", "105445aa7843bc8bf206b12000100000/2")
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=b,c", "105445aa7843bc8bf206b12000100000/0;o=1")
	f.Add("00-00000000000000000000000000000000-b7ad6b7169203331-01", "", "105445aa7843bc8bf206b12000100000/18446744073709551615")
	f.Fuzz(func(t *testing.T, traceparent, tracestate, cloud string) {
		h := http.Header{"Traceparent": {traceparent}, "Tracestate": {tracestate}, "X-Cloud-Trace-Context": {cloud}}
		sc := callerSpan(h)
		if !sc.IsValid() {
			return
		}
		id := sc.TraceID().String()
		if !sc.IsRemote() || !strings.Contains(strings.ToLower(traceparent+cloud), id) {
			t.Errorf("callerSpan(%q, %q) = trace %s, remote %v: not a trace the headers named", traceparent, cloud, id, sc.IsRemote())
		}
	})
}
