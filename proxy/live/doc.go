// Package live relays conversations: a caller's WebSocket to the agent's,
// frame for frame, text and binary, until either side closes (a bidi
// method of the map, docs/live.md). The agent's side is its WebSocket
// (Dial) or, for an agent with none, one full-duplex HTTP/1.1 request
// with a line per frame each way (DialNDJSON). It owns one
// conversation's caps and clocks: one frame's bytes, the backlog read from
// one side and not yet written to the other, idle and maximum duration.
// It does not admit callers: the Host and Origin guard, tokens,
// per-caller limits and the count of conversations at once are the
// proxy's, before Accept.
//
// Between two WebSockets (both sides a *WS) frames pass as the peer sent
// them: the caller's are masked, as the agent expects of the relay that
// dialled it, and the agent's are not, as the caller expects of the
// relay it dialled, so their bytes are valid on the other side as they
// are. Each side's reader checks every frame's header (the caps, the
// masking, the opcodes) and hands the whole frames it read to the other
// side's socket with one write(2) that does not wait; only what the
// socket does not take then is copied to the queue, for a writer.
//
// The invariants:
//
//   - Memory is bounded: each direction holds at most
//     config.Live.QueueFrames frames and QueueBytes bytes read and not yet
//     written; a reader slower than that is closed with 1008 rather than
//     buffered for.
//   - A conversation ends once, for one reason (Result), and both sides
//     are then closed at once: the side that ended it with the close
//     frame it sent (or none), the other with a code saying why.
//   - Run returns only when every goroutine it started has ended and
//     both connections are closed.
package live
