// Package otlptest is an OTLP trace receiver for tests: an httptest
// server speaking OTLP/HTTP (protobuf or JSON) or a gRPC server on
// loopback, each decoding what it receives with the official
// go.opentelemetry.io/proto/otlp types, so a test sees the spans as a
// collector would.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name            string
	Kind            string // "server", "client", "internal", …
	TraceID, SpanID string // hex
	Parent          string // hex, "" for a root span
	TraceState      string
	Attrs           map[string]any // string, int64, float64 or bool values
	Events          []Event
	Status          string // "unset", "ok" or "error"
	StatusMessage   string
	Resource        map[string]any
	Start, End      time.Time
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// Event is the span's event named name, or nil.
func (s Span) Event(name string) *Event {
	for i := range s.Events {
		if s.Events[i].Name == name {
			return &s.Events[i]
		}
	}
	return nil
}

// Receiver collects the spans exported to it.
type Receiver struct {
	// URL is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu    sync.Mutex
	spans []Span
	paths []string // the HTTP paths exports came to
	got   chan struct{}
	// countOnly keeps no spans, only their count (NewCounter).
	countOnly bool
	count     int
}

func newReceiver() *Receiver { return &Receiver{got: make(chan struct{}, 1)} }

// NewHTTP starts an OTLP/HTTP receiver; it takes exports on any path.
func NewHTTP(t testing.TB) *Receiver {
	r := newReceiver()
	srv := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// NewCounter starts an OTLP/HTTP receiver that decodes what it gets but
// keeps only the number of spans (Count): a receiver for benchmarks,
// doing as little as a receiver can.
func NewCounter(t testing.TB) *Receiver {
	r := newReceiver()
	r.countOnly = true
	srv := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Count is the number of spans received.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count + len(r.spans)
}

// NewGRPC starts an OTLP/gRPC receiver on loopback; URL is http://host:port.
func NewGRPC(t testing.TB) *Receiver {
	r := newReceiver()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, grpcService{r: r})
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	r.URL = "http://" + ln.Addr().String()
	return r
}

type grpcService struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcService) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.r.add(req, "")
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	jsonBody := strings.HasPrefix(req.Header.Get("Content-Type"), "application/json")
	if jsonBody {
		err = protojson.Unmarshal(b, &msg)
	} else {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg, req.URL.Path)
	var out []byte
	if jsonBody {
		w.Header().Set("Content-Type", "application/json")
		out, _ = protojson.Marshal(&coltrace.ExportTraceServiceResponse{})
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	}
	w.Write(out)
}

func (r *Receiver) add(req *coltrace.ExportTraceServiceRequest, path string) {
	if r.countOnly {
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		r.mu.Lock()
		r.count += n
		r.mu.Unlock()
		return
	}
	var spans []Span
	for _, rs := range req.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				spans = append(spans, flatten(s, res))
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	if path != "" {
		r.paths = append(r.paths, path)
	}
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
}

func flatten(s *tracepb.Span, res map[string]any) Span {
	out := Span{
		Name:          s.Name,
		Kind:          strings.ToLower(strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")),
		TraceID:       hex.EncodeToString(s.TraceId),
		SpanID:        hex.EncodeToString(s.SpanId),
		Parent:        hex.EncodeToString(s.ParentSpanId),
		TraceState:    s.TraceState,
		Attrs:         attrs(s.Attributes),
		Status:        strings.ToLower(strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_")),
		StatusMessage: s.GetStatus().GetMessage(),
		Resource:      res,
		Start:         time.Unix(0, int64(s.StartTimeUnixNano)),
		End:           time.Unix(0, int64(s.EndTimeUnixNano)),
	}
	for _, e := range s.Events {
		out.Events = append(out.Events, Event{Name: e.Name, Time: time.Unix(0, int64(e.TimeUnixNano)), Attrs: attrs(e.Attributes)})
	}
	return out
}

func attrs(kvs []*common.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.GetValue().(type) {
		case *common.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *common.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *common.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		case *common.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		default:
			m[kv.Key] = kv.Value.String()
		}
	}
	return m
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Paths are the HTTP paths the exports came to.
func (r *Receiver) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// Wait waits for the spans received to satisfy done, and returns them.
// The bound only turns a missing span into a failure with a message; the
// wait ends as soon as the spans come.
func (r *Receiver) Wait(t testing.TB, what string, done func([]Span) bool) []Span {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		if spans := r.Spans(); done(spans) {
			return spans
		}
		select {
		case <-r.got:
		case <-timeout:
			t.Fatalf("the receiver never got %s; it got %+v", what, r.Spans())
			return nil
		}
	}
}

// Tracer is a tracer whose spans are exported to r, each as it ends,
// through the SDK's OTLP/HTTP exporter; the provider shuts down when the
// test ends.
func (r *Receiver) Tracer(t testing.TB) trace.Tracer {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(r.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("test")
}

// Find is the first span of spans that match says is the one, or nil.
func Find(spans []Span, match func(Span) bool) *Span {
	for i := range spans {
		if match(spans[i]) {
			return &spans[i]
		}
	}
	return nil
}

// Kind matches the spans of kind ("server", "client") whose
// sidecar.class_method is method.
func Kind(kind, method string) func(Span) bool {
	return func(s Span) bool { return s.Kind == kind && s.Attrs["sidecar.class_method"] == method }
}
