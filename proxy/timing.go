package proxy

import (
	"net/http"
	"strconv"
	"time"
)

// setServerTiming gives the reply its Server-Timing header (W3C Server
// Timing), the call's phases up to its head, each with its dur in
// milliseconds: queue (from the request's arrival to its concurrency
// slot), connect (from then to a connection to the agent: the readiness
// wait, building the request, the dial or a pooled connection) and agent
// (from then to the agent's reply head). They follow one another, so
// they add up to the time to the agent's first byte. A phase the call
// did not reach is left out; a call that reached none gets no header.
//
// The value is built on the stack and kept in the call (c.timing), so
// the header costs one allocation, its string.
func setServerTiming(w http.ResponseWriter, c *call) {
	p := &c.notes.Phases
	var buf [96]byte
	b := appendTiming(buf[:0], "queue", p.Accepted, p.Queued)
	b = appendTiming(b, "connect", p.Queued, p.Connected)
	b = appendTiming(b, "agent", p.Connected, p.FirstByte)
	if len(b) == 0 {
		return
	}
	c.timing[0] = string(b)
	w.Header()["Server-Timing"] = c.timing[:]
}

// appendTiming appends one Server-Timing entry, "name;dur=<ms>", for the
// span from one to two, when both happened.
func appendTiming(b []byte, name string, from, to time.Time) []byte {
	if from.IsZero() || to.IsZero() {
		return b
	}
	if len(b) > 0 {
		b = append(b, ", "...)
	}
	b = append(b, name...)
	b = append(b, ";dur="...)
	return appendMillis(b, to.Sub(from))
}

// appendMillis appends d in milliseconds to the microsecond, without
// trailing zeros: 41.2, 0.125, 3.
func appendMillis(b []byte, d time.Duration) []byte {
	us := max(d.Microseconds(), 0)
	b = strconv.AppendInt(b, us/1000, 10)
	if frac := us % 1000; frac != 0 {
		b = append(b, '.', byte('0'+frac/100))
		if frac%100 != 0 {
			b = append(b, byte('0'+frac/10%10))
			if frac%10 != 0 {
				b = append(b, byte('0'+frac%10))
			}
		}
	}
	return b
}
