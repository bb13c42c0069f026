package tracing

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/internal/otlptest"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestFromEnvOff: with no endpoint, or one turned off by OTEL_SDK_DISABLED
// or OTEL_TRACES_EXPORTER=none, there is no provider and no goroutine.
func TestFromEnvOff(t *testing.T) {
	tests := []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "TRUE"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	}
	for _, env := range tests {
		p, err := FromEnv(context.Background(), envOf(env), zaptest.NewLogger(t))
		if p != nil || err != nil {
			t.Errorf("FromEnv(%v) = %v, %v; want off", env, p, err)
		}
		if p.Tracer() != nil {
			t.Errorf("FromEnv(%v).Tracer() is not nil", env)
		}
		if err := goleak.Find(); err != nil {
			t.Errorf("FromEnv(%v) left goroutines running: %v", env, err)
		}
	}
}

// TestFromEnvOnRunsExporter: on, the exporter's goroutine runs (which
// TestFromEnvOff would see), and Shutdown ends it.
func TestFromEnvOnRunsExporter(t *testing.T) {
	p, err := FromEnv(context.Background(), envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}), zaptest.NewLogger(t))
	if err != nil || p == nil {
		t.Fatalf("FromEnv = %v, %v; want a provider", p, err)
	}
	if goleak.Find() == nil {
		t.Errorf("no exporter goroutine while tracing is on: the off check cannot see one")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(); err != nil {
		t.Errorf("goroutines left after Shutdown: %v", err)
	}
}

// TestFromEnvErrors: a bad value is an error naming its variable, every
// one at once.
func TestFromEnvErrors(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	tests := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"OTEL_SDK_DISABLED": "yes", "OTEL_EXPORTER_OTLP_ENDPOINT": ep}, []string{`OTEL_SDK_DISABLED: "yes" is not true or false`}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_ENDPOINT": ep}, []string{`OTEL_TRACES_EXPORTER: "zipkin"`}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, []string{`OTEL_TRACES_EXPORTER: "zipkin"`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}, []string{`OTEL_EXPORTER_OTLP_ENDPOINT: "127.0.0.1:4318" is not an http:// or https:// URL`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://x/y"}, []string{`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "ftp://x/y"`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://%zz"}, []string{`OTEL_EXPORTER_OTLP_ENDPOINT: "http://%zz" is not an http:// or https:// URL: invalid URL escape`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, []string{`OTEL_EXPORTER_OTLP_PROTOCOL: "thrift" is not`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			[]string{`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "udp"`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "sometimes"}, []string{`OTEL_TRACES_SAMPLER: "sometimes" is not supported`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
			[]string{`OTEL_TRACES_SAMPLER_ARG: "2" is not a ratio from 0 to 1`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
			[]string{`OTEL_TRACES_SAMPLER_ARG: "half"`}},
		// NaN compares false both ways: it was taken, sampling all on
		// amd64 and none on arm64.
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "NaN"},
			[]string{`OTEL_TRACES_SAMPLER_ARG: "NaN" is not a ratio from 0 to 1`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "-nan"},
			[]string{`OTEL_TRACES_SAMPLER_ARG: "-nan" is not a ratio from 0 to 1`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "+Inf"},
			[]string{`OTEL_TRACES_SAMPLER_ARG: "+Inf" is not a ratio from 0 to 1`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_RESOURCE_ATTRIBUTES": "team=a,broken,=x,bad=%zz"},
			[]string{`OTEL_RESOURCE_ATTRIBUTES: "broken", "=x", "bad=%zz" not key=value`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_SAMPLER": "y", "OTEL_EXPORTER_OTLP_PROTOCOL": "z"},
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_PROTOCOL"}},
	}
	for _, tt := range tests {
		p, err := FromEnv(context.Background(), envOf(tt.env), zaptest.NewLogger(t))
		if err == nil {
			p.Shutdown(context.Background())
			t.Errorf("FromEnv(%v) = nil error, want %q", tt.env, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "tracing: ") {
				t.Errorf("FromEnv(%v) = %q, want it to say %q", tt.env, err, w)
			}
		}
	}
}

// export makes one span through the provider env asks for and shuts it
// down, which sends the span.
func export(t *testing.T, env map[string]string) {
	t.Helper()
	p, err := FromEnv(context.Background(), envOf(env), zaptest.NewLogger(t))
	if err != nil || p == nil {
		t.Fatalf("FromEnv(%v) = %v, %v", env, p, err)
	}
	_, span := p.Tracer().Start(context.Background(), "probe")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestFromEnvExports: the spans reach the endpoint by the protocol asked
// for, with the service name and resource attributes.
func TestFromEnvExports(t *testing.T) {
	tests := []struct {
		name     string
		grpc     bool
		env      map[string]string // URL stands for the receiver's
		path     string
		resource map[string]any
	}{
		{"default http", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "URL"}, "/v1/traces",
			map[string]any{"service.name": "sidecar", "telemetry.sdk.language": "go"}},
		{"base path", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "URL/otlp/"}, "/otlp/v1/traces", nil},
		{"traces endpoint as is", false, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "URL/custom/spans", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
			"/custom/spans", nil},
		{"json", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "URL", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "/v1/traces", nil},
		{"service and resource", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "URL", "OTEL_SERVICE_NAME": "pricer",
			"OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored, team=a%20b,deployment.environment=prod"}, "/v1/traces",
			map[string]any{"service.name": "pricer", "team": "a b", "deployment.environment": "prod"}},
		{"service from resource", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "URL", "OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs"},
			"/v1/traces", map[string]any{"service.name": "from-attrs"}},
		{"grpc", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "URL", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "",
			map[string]any{"service.name": "sidecar"}},
		{"grpc traces", true, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "URL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := otlptest.NewHTTP(t)
			if tt.grpc {
				rec = otlptest.NewGRPC(t)
			}
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = strings.Replace(v, "URL", rec.URL, 1)
			}
			export(t, env)
			spans := rec.Spans()
			if len(spans) != 1 || spans[0].Name != "probe" {
				t.Fatalf("received %+v, want the one span", spans)
			}
			for k, v := range tt.resource {
				if spans[0].Resource[k] != v {
					t.Errorf("resource %s = %v, want %v", k, spans[0].Resource[k], v)
				}
			}
			if paths := rec.Paths(); tt.path != "" && (len(paths) != 1 || paths[0] != tt.path) {
				t.Errorf("exported to %v, want %s", paths, tt.path)
			}
		})
	}
}

// TestFromEnvSampler: the sampler the environment names decides.
func TestFromEnvSampler(t *testing.T) {
	tests := []struct {
		sampler, arg string
		want         int
	}{
		{"", "", 1},
		{"always_off", "", 0},
		{"traceidratio", "0", 0},
		{"traceidratio", "1", 1},
		{"parentbased_always_off", "", 0},
		{"parentbased_traceidratio", "", 1},
		{"ALWAYS_ON", "", 1},
	}
	for _, tt := range tests {
		rec := otlptest.NewHTTP(t)
		export(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rec.URL, "OTEL_TRACES_SAMPLER": tt.sampler, "OTEL_TRACES_SAMPLER_ARG": tt.arg})
		if got := len(rec.Spans()); got != tt.want {
			t.Errorf("sampler %q %q: %d spans exported, want %d", tt.sampler, tt.arg, got, tt.want)
		}
	}
}

// TestFromEnvRedactsEndpoint: the endpoint's userinfo and query values
// (credentials) are in neither the endpoint the start-up line shows nor
// an error quoting it.
func TestFromEnvRedactsEndpoint(t *testing.T) {
	secrets := []string{"alice", "s3cr3t", "abc123"}
	rec := otlptest.NewHTTP(t)
	withSecrets := strings.Replace(rec.URL, "http://", "http://alice:s3cr3t@", 1) + "/?token=abc123"
	p, err := FromEnv(context.Background(), envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": withSecrets}), zaptest.NewLogger(t))
	if err != nil || p == nil {
		t.Fatalf("FromEnv(%q) = %v, %v", withSecrets, p, err)
	}
	p.Shutdown(context.Background())
	want := strings.Replace(rec.URL, "http://", "http://REDACTED@", 1) + "/v1/traces?token=REDACTED"
	if p.Endpoint != want {
		t.Errorf("Endpoint = %q, want %q", p.Endpoint, want)
	}
	bad := []string{
		"ftp://alice:s3cr3t@collector/?token=abc123",  // not http
		"http://alice:s3cr3t@%zz/v1?token=abc123",     // does not parse
		"http://alice:s3cr3t@host:port/?token=abc123", // nor this
	}
	for _, ep := range bad {
		_, err := FromEnv(context.Background(), envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}), zaptest.NewLogger(t))
		if err == nil {
			t.Fatalf("FromEnv(%q) = nil error", ep)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("FromEnv(%q) = %q, which shows %q", ep, err, s)
			}
		}
		if !strings.Contains(err.Error(), "REDACTED") {
			t.Errorf("FromEnv(%q) = %q, want it to say what it redacted", ep, err)
		}
	}
}

// TestFromEnvExportFailureWarns: an export the collector refuses is
// logged as a warning; the sidecar goes on.
func TestFromEnvExportFailureWarns(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "no", http.StatusBadRequest) // not retried
	}))
	defer refusing.Close()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10") // the batch goes at once, not at Shutdown
	observed, logs := observer.New(zap.WarnLevel)
	// Its credentials are in no warning.
	withSecrets := strings.Replace(refusing.URL, "http://", "http://alice:s3cr3t@", 1) + "/?token=abc123"
	p, err := FromEnv(context.Background(), envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": withSecrets}), zap.New(observed))
	if err != nil || p == nil {
		t.Fatalf("FromEnv = %v, %v", p, err)
	}
	defer p.Shutdown(context.Background())
	_, span := p.Tracer().Start(context.Background(), "refused")
	span.End()
	deadline := time.Now().Add(30 * time.Second)
	for logs.FilterMessage("tracing").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no warning logged for the refused export")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e := logs.FilterMessage("tracing").All()[0]
	if e.Level != zap.WarnLevel || !strings.Contains(e.ContextMap()["error"].(string), "400") {
		t.Errorf("logged %v %v, want a warning with the collector's 400", e.Level, e.ContextMap())
	}
	for _, secret := range []string{"alice", "s3cr3t", "abc123"} {
		if strings.Contains(fmt.Sprint(e.ContextMap()), secret) {
			t.Errorf("logged %v, which shows %q", e.ContextMap(), secret)
		}
	}
}
