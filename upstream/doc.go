// Package upstream owns the outbound side of the sidecar: the transport to
// the agent (loopback TCP or a Unix socket), building each request from the
// method map, the retry policy, readiness probing, and turning the agent's
// reply (SSE, ndjson, text chunks or one JSON value) into core.Records,
// compact JSON values (NewStream). Its Client is the core.Agent for plain methods;
// traced (Client.Trace), each request to the agent is a CLIENT span.
package upstream
