// Package core is the seam between the sidecar's front doors and its
// agent: one request a door opened (Exchange: its Call, whether it
// streams, its Writer) or answered itself (Answer), one call (Call), its
// streamed reply (Records, a Waiter when they can say when they wait, a
// front door's Encoder to write them; the mapping stage is an Agent that
// wraps another, dialect.Agent), the Agent that answers calls (Mux routes
// handler methods to the built-in ones), the contract's routes
// (RouteUnary, RouteStream), the errors a call can end with, and the one
// mapping of an error to what the caller sees (FailureOf: the reasons
// table of docs/errors.md; NoRoute and NotAllowed for every door's 404
// and 405), and a door's registration (Protocol: its config Kind and how
// its Options are built, with what the program gives every door, Host;
// its Probe, how the shared hostile-input tests call it), which
// proxy/doors lists, and whose a request is (OwnerOf: what a door binds
// the state it keeps for a caller to).
//
// It is a leaf: it imports only config, metrics (for outcomes) and
// rawjson, so the serving side (proxy and its front doors) and the agent
// implementations (upstream's HTTP client, adk's handlers) can both import
// it, and neither imports the other. It lives under proxy because the
// serving side owns the seam: the Agent interface is what a front door
// consumes.
package core
