// Package core is the seam between the sidecar's front doors and its
// agent: one call (Call), its streamed reply (Records), the Agent that
// answers calls, and the errors a call can end with (the README's failure
// table).
//
// It is a leaf: it imports only config and rawjson, so the serving side
// (proxy and its front doors) and the agent implementations (upstream's
// HTTP client, adk's handlers) can both import it, and neither imports the
// other. It lives under proxy because the serving side owns the seam: the
// Agent interface is what a front door consumes.
package core
