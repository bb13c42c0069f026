// Package mcp is the MCP (Model Context Protocol) front door (Door, a
// proxy.Door): the Streamable HTTP transport on one endpoint
// (protocols.mcp.path, /mcp), serving the methods of the map as tools.
// tools/list lists one tool per method (its name, description and
// parameters); tools/call calls it, its arguments the method's input: a
// unary method's output is the result's content, a streaming method's
// text records are progress notifications on an SSE response and its whole
// text the result's. Both revisions clients speak are served on the one
// endpoint, chosen per request: 2026-07-28, stateless (server/discover,
// the protocol version in every request's _meta and headers), and
// 2025-06-18 / 2025-11-25 (initialize, an Mcp-Session-Id kept in a bounded
// per-process store fair between holders, limits.mcp_sessions, session.go).
// door.go builds the door and routes its endpoint; the tools are the map's
// (tools.go). The shared gate reads the body under the shared limits; Open
// decodes it (rpc.go) and answers what needs no agent itself, per revision
// (open.go); a call's exchange writes its answer (exchange.go, a stream
// through the shared stream writer), and a 2025 session's call can be
// ended by notifications/cancelled (cancel.go). Like proxy/a2a it uses
// only core's types and does not import proxy.
package mcp
