// Package foundry is the Azure AI Foundry hosted agents front door (Door,
// a proxy.Door), the invocations protocol: GET /readiness is the
// sidecar's health (200 while the agent is ready, 503 while it is not or
// the sidecar drains); POST /invocations passes the body to the one
// configured method as its input (a JSON body as it is, any other body as
// a JSON string of its text) and answers the method's output as JSON
// (unary) or as text/event-stream, one "data: <record>" event per record
// (streaming). x-agent-invocation-id is echoed, or a new UUID, and
// x-agent-session-id resolved from the agent_session_id query parameter,
// else $FOUNDRY_AGENT_SESSION_ID, else a new UUID; both are on the reply
// and passed to the agent, with x-agent-user-id and
// x-agent-foundry-call-id when sent. It does not import proxy.
package foundry
