// Package proxy owns the inbound side of the sidecar: the public server
// and what every front door shares. A call is counted in flight, has its
// request body bounded and read, waits in the concurrency queue and for
// a ready agent, is answered by the core.Agent, and ends with one log line
// and its metrics; draining, ending the calls at shutdown and /healthz
// are here too. Failures are mapped once (core.FailureOf).
//
// Each protocol's wire format is a front door beside it: proxy/platform,
// the Agent Platform contract (its routes, envelope, {"output": …}
// replies, ndjson streams and error shapes), is the first. proxy imports
// neither upstream nor adk: the program hands it a core.Agent.
package proxy
