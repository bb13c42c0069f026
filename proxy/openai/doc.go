// Package openai is the OpenAI-compatible front door (Door, a
// proxy.Door): GET /v1/models lists the one model the door serves, POST
// /v1/chat/completions and POST /v1/responses call one method of the map
// (Options.Method) with the input every conversational door gives
// ({"message": <the last user message's text>, "messages": <the history
// as chat messages>, "ids": {<the answer's id>}}, wire.go) and answer in
// OpenAI's shapes, a
// whole object or a text/event-stream of chunks (chat.completion.chunk
// data events and [DONE]; the Responses API's typed events), as the
// request's stream asks. The agent's records reach it through the mapping
// stage with emit: text semantics (the door's calls emit text whatever
// the method's emit says), so any dialect the stage reads arrives as text
// deltas, reasoning as reasoning_content. Failures are OpenAI's error
// object with its HTTP status before the first byte, one data event of
// it after (Chat Completions), or response.failed (Responses). An
// api_key, when set, is checked on every route but /healthz; the Server
// refuses, before the door, a request on a loopback connection that does
// not name a loopback Host, a POST whose Origin is another site's, on
// any connection, and a call whose body is not declared JSON (the check
// every door shares), so no web page drives the door.
// It uses only core's types and does not import proxy.
package openai
