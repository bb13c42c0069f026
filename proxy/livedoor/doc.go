// Package livedoor is the live door (Door, a proxy.Door): one route, GET
// at its root, that carries conversations with a bidi method of the map
// (docs/live.md), for Agent Runtime's WebSocket passthrough and for Cloud
// Run or Kubernetes, mounted on the platform's port or on a listener of
// its own. With the platform's framing (the default) a conversation opens
// with a setup frame naming its class_method and first input, the
// caller's {"bidi_stream_input": …} frames reach the agent as their
// contents and the agent's frames come back as {"bidiStreamOutput": …}
// (framing.go); with the raw framing frames cross unchanged, as on
// AgentCore's /ws. It does not import proxy.
package livedoor
