// Package tracing owns the sidecar's OpenTelemetry tracer provider: it
// reads the standard OTEL_* environment, builds the OTLP exporter (HTTP or
// gRPC) and the batching span processor when tracing is on, and flushes
// what is left at shutdown.
//
// Invariants:
//   - Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and OTEL_SDK_DISABLED=true
//     or OTEL_TRACES_EXPORTER=none turns it off whatever else is set. Off,
//     nothing is built: no exporter, no goroutine, a nil Tracer.
//   - A bad value of a variable read here is an error at startup, naming
//     the variable; nothing is silently defaulted.
//   - Only the program (cmd/sidecar) builds a Provider; proxy and upstream
//     take the trace.Tracer it hands out and import no SDK.
package tracing
