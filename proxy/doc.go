// Package proxy owns the inbound side of the sidecar: the public server
// and what every front door shares. A call is counted in flight, has its
// request body bounded and read, waits in the concurrency queue and for
// a ready agent, is answered by the core.Agent, and ends with one log line
// and its metrics (and, with a Tracer, one SERVER span: trace.go); draining, ending the calls at shutdown and the health
// answer are here too. Failures are mapped once (core.FailureOf).
//
// A front door is a Door: it routes its protocol's requests and opens
// each call's request, whose body the Server read, into a core.Exchange:
// the core.Call for the agent, whether it streams, and the writers of its
// replies, records (a core.Encoder) and failures in its wire format. The
// per-call pipeline is handle (handle.go); the gate before the agent
// (slots, queue, body, readiness) is gate.go; a request the door refuses
// before it is a call gets the call's log line and metrics from refuser
// (refuse.go), outside the pipeline. proxy/platform, the Agent
// Platform contract (its routes, envelope, {"output": …} replies, ndjson
// streams and error shapes), is the first door; a further protocol is one
// more Door beside it. proxy imports neither its doors nor upstream nor
// adk: the program hands the Server its core.Agent and serves each Door
// with HandlerFor.
package proxy
