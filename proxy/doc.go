// Package proxy owns the inbound side of the sidecar: the public server
// and what every front door shares. A call is counted in flight, has its
// request body bounded and read, waits in the concurrency queue and for
// a ready agent, is answered by the core.Agent, and ends with one log line
// and its metrics; draining, ending the calls at shutdown and the health
// answer are here too. Failures are mapped once (core.FailureOf).
//
// A front door is a Door: it routes its protocol's requests, decodes a
// call's request into a core.Call and writes replies, records (its
// core.Encoder) and failures in its wire format. proxy/platform, the
// Agent Platform contract (its routes, envelope, {"output": …} replies,
// ndjson streams and error shapes), is the first; a further protocol is
// one more Door beside it. proxy imports neither its doors nor upstream
// nor adk: the program hands the Server its Door and its core.Agent.
package proxy
