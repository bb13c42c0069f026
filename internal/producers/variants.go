package producers

import "fmt"

const (
	question   = "What is the weather in Paris?"
	uiMessage  = `{"id":"chat-1","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"` + question + `"}]}]}`
	runInput   = `{"threadId":"thread-1","runId":"run-1","state":{},"messages":[{"id":"m1","role":"user","content":"` + question + `"}],"tools":[],"context":[],"forwardedProps":{}}`
	chatBody   = `{"model":"%s","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"` + question + `"}]}`
	respBody   = `{"model":"%s","stream":true,"input":"` + question + `"}`
	agentsBody = `{"input":"` + question + `"}`
	graphBody  = `{"assistant_id":"%s","input":{"messages":[{"role":"user","content":"%s"}]},"stream_mode":["messages-tuple","updates"]}`
	a2a03      = `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"%s"}]}}}`
	a2a10      = `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"%s"}]}}}`
	sse        = "text/event-stream"
)

var (
	vercelHeader = map[string]string{"X-Vercel-Ai-Ui-Message-Stream": "v1"}
	acceptSSE    = map[string]string{"Accept": sse}
	a2aV1        = map[string]string{"A2A-Version": "1.0"}
)

// Variants: every request TestProducersCapture makes, one capture each.
var Variants = []Variant{
	{Dialect: "vercel-ui", Name: "text", Path: "/api/chat/text", Body: uiMessage, ContentType: sse, WantHeader: vercelHeader,
		Want: []string{"start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}, Last: "[DONE]"},
	{Dialect: "vercel-ui", Name: "tool", Path: "/api/chat/tool", Body: uiMessage, ContentType: sse, WantHeader: vercelHeader,
		Want: []string{"tool-input-start", "tool-input-delta", "tool-input-available", "tool-output-available", "text-delta", "finish"}, Last: "[DONE]"},
	{Dialect: "vercel-ui", Name: "error", Path: "/api/chat/error", Body: uiMessage, ContentType: sse, WantHeader: vercelHeader,
		Want: []string{"text-delta", "error", "finish"}, Last: "[DONE]"},
	{Dialect: "vercel-ui", Name: "file", Path: "/api/chat/file", Body: uiMessage, ContentType: sse, WantHeader: vercelHeader,
		Want: []string{"text-delta", "file", "finish"}, Last: "[DONE]"},

	{Dialect: "ag-ui", Name: "text", Path: "/text", Header: acceptSSE, Body: runInput, ContentType: sse,
		Want: []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"}, Last: "RUN_FINISHED"},
	{Dialect: "ag-ui", Name: "tool", Path: "/tool", Header: acceptSSE, Body: runInput, ContentType: sse,
		Want: []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT"}, Last: "RUN_FINISHED"},
	{Dialect: "ag-ui", Name: "error", Path: "/error", Header: acceptSSE, Body: runInput, ContentType: sse,
		Want: []string{"RUN_STARTED", "TEXT_MESSAGE_CONTENT"}, Last: "RUN_ERROR"},

	{Dialect: "a2a", Name: "stream", Path: "/", Body: fmt.Sprintf(a2a03, question), ContentType: sse,
		Want: []string{"task", "status-update:working", "artifact-update"}, Last: "status-update:completed:final"},
	{Dialect: "a2a", Name: "failed", Path: "/", Body: fmt.Sprintf(a2a03, "please fail"), ContentType: sse,
		Want: []string{"task", "status-update:working"}, Last: "status-update:failed:final"},
	{Dialect: "a2a", Name: "stream-v1", Path: "/", Header: a2aV1, Body: fmt.Sprintf(a2a10, question), ContentType: sse,
		Want: []string{"task", "statusUpdate:TASK_STATE_WORKING", "artifactUpdate"}, Last: "statusUpdate:TASK_STATE_COMPLETED"},
	{Dialect: "a2a", Name: "failed-v1", Path: "/", Header: a2aV1, Body: fmt.Sprintf(a2a10, "please fail"), ContentType: sse,
		Want: []string{"task", "statusUpdate:TASK_STATE_WORKING"}, Last: "statusUpdate:TASK_STATE_FAILED"},

	{Dialect: "langgraph", Name: "text", Path: "/runs/stream", Body: fmt.Sprintf(graphBody, "text", question), ContentType: sse,
		Want: []string{"metadata", "messages", "updates"}, Last: "updates"},
	{Dialect: "langgraph", Name: "tool", Path: "/runs/stream", Body: fmt.Sprintf(graphBody, "tool", question), ContentType: sse,
		Want: []string{"metadata", "messages", "updates"}, Last: "updates"},
	{Dialect: "langgraph", Name: "error", Path: "/runs/stream", Body: fmt.Sprintf(graphBody, "error", question), ContentType: sse,
		Want: []string{"metadata", "messages"}, Last: "error"},

	{Dialect: "openai-chat", Name: "text", Path: "/v1/chat/completions", Body: fmt.Sprintf(chatBody, "text"), ContentType: sse,
		Want: []string{"delta", "finish:stop", "usage"}, Last: "[DONE]"},
	{Dialect: "openai-chat", Name: "tool", Path: "/v1/chat/completions", Body: fmt.Sprintf(chatBody, "tool"), ContentType: sse,
		Want: []string{"tool_calls", "finish:tool_calls", "usage"}, Last: "[DONE]"},
	{Dialect: "openai-chat", Name: "error", Path: "/v1/chat/completions", Body: fmt.Sprintf(chatBody, "error"), ContentType: sse,
		Want: []string{"delta"}, Last: "error"},

	{Dialect: "openai-responses", Name: "text", Path: "/v1/responses", Body: fmt.Sprintf(respBody, "text"), ContentType: sse,
		Want: []string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_text.done"}, Last: "response.completed"},
	{Dialect: "openai-responses", Name: "tool", Path: "/v1/responses", Body: fmt.Sprintf(respBody, "tool"), ContentType: sse,
		Want: []string{"response.created", "response.function_call_arguments.delta", "response.function_call_arguments.done"}, Last: "response.completed"},
	{Dialect: "openai-responses", Name: "error", Path: "/v1/responses", Body: fmt.Sprintf(respBody, "error"), ContentType: sse,
		Want: []string{"response.created", "response.output_text.delta"}, Last: "error"},
	{Dialect: "openai-responses", Name: "failed", Path: "/v1/responses", Body: fmt.Sprintf(respBody, "failed"), ContentType: sse,
		Want: []string{"response.created", "response.output_text.delta"}, Last: "response.failed"},
	{Dialect: "openai-responses", Name: "image", Path: "/v1/responses", Body: fmt.Sprintf(respBody, "image"), ContentType: sse,
		Want: []string{"response.created", "response.image_generation_call.partial_image", "response.output_item.done"}, Last: "response.completed"},

	{Dialect: "openai-agents", Name: "text", Path: "/text", Body: agentsBody, ContentType: sse,
		Want: []string{"response_started", "output_text_delta", "response_done"}, Last: "message_output_created"},
	{Dialect: "openai-agents", Name: "tool", Path: "/tool", Body: agentsBody, ContentType: sse,
		Want: []string{"response_done", "tool_called", "tool_output", "output_text_delta"}, Last: "message_output_created"},
	{Dialect: "openai-agents", Name: "error", Path: "/error", Body: agentsBody, ContentType: sse,
		Want: []string{"response_started", "output_text_delta"}, Last: "error"},
}
