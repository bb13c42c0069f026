// Package a2a is the A2A (Agent2Agent) front door (Door, a proxy.Door): the
// agent card at /.well-known/agent-card.json (and the older
// /.well-known/agent.json) listing the A2A 0.3 and 1.0 interfaces of
// both bindings, and the JSON-RPC binding at POST /: message/send,
// message/stream (SSE), tasks/get and tasks/cancel of A2A 0.3, and
// SendMessage, SendStreamingMessage, GetTask and CancelTask of A2A 1.0,
// chosen by the A2A-Version header (or query parameter); and the
// HTTP+JSON binding of both versions beside it (rest.go: POST
// /message:send, /message:stream, GET /tasks/{id}, POST
// /tasks/{id}:cancel, …, under an optional /{tenant}, 0.3's under /v1,
// and the card at /v1/card), the same tasks behind both, its errors
// google.rpc.Status. Every message calls one method of the
// map (Options.Method): its text parts, the task's history and ids become
// the method's input (the shape every conversational door gives, rpc.go),
// its records artifact updates (the mapping stage's end record none), and
// its end the task's terminal state. A
// bounded in-memory store (tasks, limits.task_store_bytes) answers
// tasks/get and tasks/cancel. The door opens each request of either binding: the
// shared gate reads the body under the shared limits, Open decodes it
// (rpc.go) into a call whose exchange writes the answer (stream.go, a
// message/stream's events through the shared stream writer), or answers
// it without the agent. Like proxy/platform it
// uses only core's types and does not import proxy.
package a2a
