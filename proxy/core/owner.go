package core

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/quota"
)

// Owner is who a request comes from, as far as a front door can tell
// (OwnerOf): what a door binds the state it keeps for a caller to (MCP's
// sessions, A2A's tasks).
type Owner [sha256.Size]byte

// OwnerOf is the Owner of a request with header h: the hash of its
// Authorization header (none: the hash of nothing). State bound to it
// answers only requests of the same owner, as MCP's security practices
// (bind a session to the user) and A2A's (a task is visible to the client
// that made it, §13.1) ask, so an id seen by someone else is no way in
// with another credential. The credential itself is never kept.
func OwnerOf(h http.Header) Owner {
	return sha256.Sum256([]byte(strings.Join(h.Values("Authorization"), "\n")))
}

// OwnerOfRequest is the Owner of r: on a door that checks tokens, the
// verified caller's issuer and subject (auth.Caller.ID: a refreshed token
// keeps its tasks and sessions; one sub of two issuers is two callers),
// else OwnerOf its header.
func OwnerOfRequest(r *http.Request) Owner {
	if c := auth.CallerOf(r.Context()); c != nil {
		return sha256.Sum256([]byte("caller\x00" + c.ID()))
	}
	return OwnerOf(r.Header)
}

// Scope is id as the agent sees it when o names it: a conversation id a
// caller chose or was given (A2A's contextId, the Responses API's
// response_id and previous_response_id), prefixed with the first 8 bytes
// of o in hex. An agent that keeps a conversation under the id it is given
// keeps one per owner, so a caller naming another's id (guessed or leaked)
// reaches a conversation of its own, never the other's. Stateless, so
// every replica scopes alike; the caller always sees its id unscoped.
func (o Owner) Scope(id string) string {
	const n = 8
	b := make([]byte, 0, 2*n+1+len(id))
	b = hex.AppendEncode(b, o[:n])
	return string(append(append(b, '.'), id...))
}

// Holder is whose share of a bounded store a request's state counts
// against (HolderOf), as Owner is whom it answers.
type Holder [sha256.Size]byte

// HolderOf is the Holder of r: on a door that checks tokens, the verified
// caller (auth.Caller.ID), else its client's address (quota.Address: an
// IPv6 host by its /64), as a request's quota is counted. Never what the
// caller wrote: a caller varies its Authorization for free, and were each
// one a holder of its own, a store fair between holders would let one
// host's flood of identities crowd out every other's state. Callers
// behind one address (a NAT, a balancer) share a share, as they share a
// quota.
func HolderOf(r *http.Request) Holder {
	if c := auth.CallerOf(r.Context()); c != nil {
		return sha256.Sum256([]byte("caller\x00" + c.ID()))
	}
	return sha256.Sum256([]byte("address\x00" + quota.Address(r)))
}
