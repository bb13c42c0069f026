// Package agentcore is the AWS Bedrock AgentCore Runtime front door (Door,
// a proxy.Door), the runtime's HTTP protocol: POST /invocations takes any
// JSON payload as the input of the one configured method and answers its
// output as JSON (unary) or as text/event-stream, one "data: <record>"
// event per record (streaming); GET /ping answers Healthy or HealthyBusy
// (while any call of the sidecar is in flight) with a time_of_last_update
// that moves only when the status does. Failures are {"error": …} before
// the first byte and a final data: {"error", "error_type", "message"}
// event after it, as the runtime's Python SDK writes them. The runtime's
// session, request, user and trace headers, and its custom
// X-Amzn-Bedrock-AgentCore-Runtime-Custom-* ones, are passed to the
// agent (core.Call.Pass). It does not import proxy.
package agentcore
