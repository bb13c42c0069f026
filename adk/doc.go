// Package adk serves the 14 methods of AdkApp (the Agent Platform's ADK
// template) in front of any ADK api server — Python, TypeScript, Java or
// Go — by translating each class_method into the server's REST routes
// (sessions, /run_sse, memory), and the conversation bidi_stream_query
// into its /run_live WebSocket where the server has one (live.go). It
// absorbs the servers' differences (a bare session array or a paged
// object, 200 null or 204 on delete, {"detail"} or {"error"} or HTML
// error bodies) and gives callers AdkApp's input names, output shapes and
// error messages. Which handler serves which method, and the inputs each
// requires, is adkapp.Methods' to say; this package registers a function
// for each of its handlers (handlers.go).
package adk
