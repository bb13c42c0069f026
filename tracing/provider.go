package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Scope is the instrumentation scope of the sidecar's spans.
const Scope = "github.com/sidecar-dev/sidecar"

// DefaultServiceName is the service.name of the spans when neither
// OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "sidecar"

// Provider is the sidecar's tracer provider. A nil Provider is tracing
// off: its Tracer is nil and its Shutdown does nothing.
type Provider struct {
	tp *sdktrace.TracerProvider
	// Endpoint and Protocol are where the spans go and how, for the
	// startup log line. Endpoint is redacted: its userinfo and query
	// values (credentials, often) are "REDACTED".
	Endpoint, Protocol string
}

// Tracer is the tracer of the sidecar's spans, nil when tracing is off.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tp.Tracer(Scope)
}

// Shutdown exports the spans not yet sent and stops the exporter, within
// ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}

// The protocols OTEL_EXPORTER_OTLP_PROTOCOL may name.
const (
	protoHTTP = "http/protobuf"
	protoJSON = "http/json"
	protoGRPC = "grpc"
)

// FromEnv builds the tracer provider the standard OpenTelemetry variables
// in getenv ask for, or nil (tracing off) when no OTLP endpoint is set,
// OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none. It reads:
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, used as it is, else
//     OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces added for HTTP: an
//     http:// or https:// URL (http:// sends without TLS);
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
//     http/protobuf (the default), http/json or grpc;
//   - OTEL_SERVICE_NAME (default "sidecar") and OTEL_RESOURCE_ATTRIBUTES
//     (key=value pairs, comma separated, values percent-encoded);
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default
//     parentbased_always_on).
//
// The exporter itself reads the rest of the OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, compression, certificates) from the process's
// environment. A bad value of any variable read here is an error naming
// it, every problem at once. Once on, a failed export is logged on logger
// as a warning (OpenTelemetry's error handler is process-wide).
func FromEnv(ctx context.Context, getenv func(string) string, logger *zap.Logger) (*Provider, error) {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }

	switch v := strings.ToLower(env("OTEL_SDK_DISABLED")); v {
	case "true":
		return nil, nil
	case "", "false":
	default:
		bad("OTEL_SDK_DISABLED", "%q is not true or false", v)
	}
	switch v := env("OTEL_TRACES_EXPORTER"); v {
	case "none":
		return nil, nil
	case "", "otlp":
	default:
		bad("OTEL_TRACES_EXPORTER", "%q is not supported: the sidecar exports otlp, or none", v)
	}
	endpointVar := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := env(endpointVar)
	if endpoint == "" {
		endpointVar = "OTEL_EXPORTER_OTLP_ENDPOINT"
		endpoint = env(endpointVar)
	}
	if endpoint == "" && len(errs) == 0 {
		return nil, nil
	}

	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := env(protoVar)
	if protocol == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = env(protoVar)
	}
	switch protocol {
	case "":
		protocol = protoHTTP
	case protoHTTP, protoJSON, protoGRPC:
	default:
		bad(protoVar, "%q is not http/protobuf, http/json or grpc", protocol)
	}
	u, err := url.Parse(endpoint)
	switch {
	case endpoint == "":
	case err != nil:
		// url.Error quotes the URL whole: only its reason is told.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		bad(endpointVar, "%q is not an http:// or https:// URL: %v", redactRaw(endpoint), err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		bad(endpointVar, "%q is not an http:// or https:// URL", redact(u))
	case endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" && protocol != protoGRPC:
		// The base URL of every signal: the traces go to /v1/traces under it.
		u.Path = path.Join("/", u.Path, "v1/traces")
		u.RawPath = ""
		endpoint = u.String()
	}
	sampler, err := samplerFrom(env("OTEL_TRACES_SAMPLER"), env("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		errs = append(errs, err)
	}
	attrs, err := resourceFrom(env("OTEL_RESOURCE_ATTRIBUTES"), env("OTEL_SERVICE_NAME"))
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("tracing: %w", errors.Join(errs...))
	}

	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case protoGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	case protoJSON:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	default:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	}
	shown, _ := url.Parse(endpoint)
	secrets := secretsOf(shown)
	if err != nil {
		return nil, fmt.Errorf("tracing: building the OTLP exporter: %s", hide(err.Error(), secrets))
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing", zap.String("error", hide(err.Error(), secrets)))
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler))
	return &Provider{tp: tp, Endpoint: redact(shown), Protocol: protocol}, nil
}

// samplerFrom is the sampler OTEL_TRACES_SAMPLER names, with its
// argument: the ratio of traceidratio and parentbased_traceidratio
// (default 1).
func samplerFrom(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		// NaN is neither below 0 nor above 1, and samples all or none
		// depending on the machine: only what is in [0, 1] is a ratio.
		if err != nil || !(r >= 0 && r <= 1) {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio from 0 to 1", arg)
		}
		return r, nil
	}
	switch strings.ToLower(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		r, err := ratio()
		return sdktrace.TraceIDRatioBased(r), err
	case "parentbased_traceidratio":
		r, err := ratio()
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), err
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not supported (always_on, always_off, traceidratio, "+
		"parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", name)
}

// resourceFrom is the resource of the spans: service.name "sidecar"
// unless OTEL_RESOURCE_ATTRIBUTES (pairs, the values percent-encoded)
// names one, and OTEL_SERVICE_NAME above both.
func resourceFrom(pairs, service string) ([]attribute.KeyValue, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	var bad []string
	for p := range strings.SplitSeq(pairs, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err != nil {
			bad = append(bad, strconv.Quote(p))
			continue
		}
		attrs = append(attrs, attribute.String(k, val))
	}
	if service != "" {
		attrs = append(attrs, attribute.String("service.name", service))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %s not key=value (the value percent-encoded)", strings.Join(bad, ", "))
	}
	return attrs, nil
}
