// Package a2a is the A2A (Agent2Agent) front door (Door, a proxy.Door): the
// agent card at /.well-known/agent-card.json (and the older
// /.well-known/agent.json) listing both the A2A 0.3 and the 1.0 JSON-RPC
// interfaces, and the JSON-RPC binding at POST /: message/send,
// message/stream (SSE), tasks/get and tasks/cancel of A2A 0.3, and
// SendMessage, SendStreamingMessage, GetTask and CancelTask of A2A 1.0,
// chosen by the A2A-Version header. Every message calls one method of the
// map (Options.Method): its text parts, the task's history and ids become
// the method's input (the shape every conversational door gives, rpc.go),
// its records artifact updates (the mapping stage's end record none), and
// its end the task's terminal state. A
// bounded in-memory store (tasks, limits.task_store_bytes) answers
// tasks/get and tasks/cancel. The door opens each JSON-RPC request: the
// shared gate reads the body under the shared limits, Open decodes it
// (rpc.go) into a call whose exchange writes the answer (stream.go, a
// message/stream's events through the shared stream writer), or answers
// it without the agent. Like proxy/platform it
// uses only core's types and does not import proxy.
package a2a
