// Package platform is the Agent Platform front door (Door, a proxy.Door):
// the contract's routes (core.RouteUnary and core.RouteStream served, the
// bidi route's 501, the health paths), the request envelope
// ({"class_method": …, "input": …} in every variant the platform sends)
// and the method-not-found wording, the unary {"output": …} reply, the
// ndjson stream writer (NewNDJSON, its core.Encoder) and its one flush
// policy, and failures in the contract's shapes ({"detail": …} before the
// first byte, Google's error model in a stream's final line). It turns
// requests into core calls and records and errors into bytes; proxy runs
// the call. It does not import proxy.
package platform
