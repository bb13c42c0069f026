// Package dialect owns the mapping stage of the record pipeline: it reads
// an agent framework's stream dialect (OpenAI Chat Completions and
// Responses, the OpenAI Agents SDK's run stream, the Vercel AI SDK's UI
// message stream, AG-UI, A2A, LangGraph, ADK) into one event model
// (Event: text, reasoning, tool call, tool result, end, error) and writes
// it back out as the method's emit says: text lines or ADK events.
//
// Invariants:
//   - emit raw (the default) never touches a record: Agent returns the
//     inner Agent's records themselves.
//   - A stream whose dialect cannot be placed passes through unchanged,
//     never dropped; one whose named dialect matches none of its records
//     ends with a *core.DialectError.
//   - No line out is longer than the cap (limits.record_bytes), and the
//     stage holds only what its next line needs.
//   - Every line out is one compact JSON value; text deltas come out in
//     order and complete.
//   - An error in any dialect ends the stream with a *core.AgentError
//     carrying the agent's message; terminators ([DONE], finish events)
//     are never passed on.
//
// A record is read once per record, and a token costs the line it makes:
// each mapper reads the records of a token stream (text and reasoning
// deltas, finishes) in place with scan, decoding only the fields it needs,
// and the emitters write each line into one buffer. A record the scan
// cannot read exactly as encoding/json decodes it into the mapper's struct
// (a key repeated, whose last value encoding/json keeps, merging objects;
// a key that only case-folds to a field; a field of another type; a shape
// the fast path does not take: tool calls, errors, usage) is decoded by
// encoding/json as before, so every record maps as it did
// (FuzzFastPaths compares the two).
//
// The proxy does not import this package: cmd/sidecar wraps its Agent in
// an Agent of this package, which picks the mapping per call from the
// method entry.
package dialect
