// Package proxy owns the inbound side of the sidecar: the platform's two
// routes and /healthz, envelope normalization, the per-route method
// whitelist, unary {"output": …} replies, the ndjson writer and its
// flushing, and the one place that maps failures to a status code or to a
// stream's final error line.
package proxy
