package openai

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// whole is the encoder of a request without stream whose method streams:
// the agent's stream, through the mapping stage, is gathered into the
// one answer the request asked for (a chat.completion, a completed
// response). The text is kept once, in blocks that never move
// (frames.Text), at most limits.reply_bytes, and the answer is written
// around them when the records end: nothing goes out before, so a
// failure is still an error of its own status. Asking the mapping stage
// for the whole answer instead (Agent.Unary) would hold it twice, its
// growing value then the answer.
type whole struct {
	w     http.ResponseWriter
	write func(w http.ResponseWriter, text, reasoning [][]byte) (int, error)
	max   int64 // limits.reply_bytes; 0: none
	// item, if set, keeps a part as an output item of its own (a
	// Responses image) and reports whether it did; any other part is
	// text (partText).
	item func(p *part.Part) bool

	text, reasoning frames.Text
	over            bool // the text outgrew max: the encoder stopped
	wrote           int64
	at              time.Time // when the answer was written
}

// errWholeTooLarge fails a request without stream whose answer outgrew
// what the door keeps of it.
func errWholeTooLarge(limit int64) error {
	return fmt.Errorf("%w: a request without stream is answered whole, at most limits.reply_bytes (%d bytes); ask with stream: true",
		core.ErrReplyTooLarge, limit)
}

// Begin writes nothing: the answer goes out whole, or fails whole.
func (g *whole) Begin() error { return nil }

// Copy keeps each piece of the answer and, when the records end
// cleanly, writes the answer. Past the cap it stops reading (Stopped).
func (g *whole) Copy(r core.Records) error {
	for r.Next() {
		if core.Control(r) {
			continue
		}
		p, ok := pieceOf(r.Record())
		if !ok {
			continue
		}
		if p.part != nil {
			if g.item != nil && g.item(p.part) {
				continue
			}
			p.text = partText(nil, p.part)
		}
		if g.max > 0 && g.text.Len()+g.reasoning.Len()+int64(len(p.text)) > g.max {
			g.over = true
			return nil
		}
		if p.reasoning {
			g.reasoning.Append(p.text)
		} else {
			g.text.Append(p.text)
		}
	}
	if r.Err() != nil {
		return nil // the Server fails the call (Fail)
	}
	g.at = time.Now()
	n, err := g.write(g.w, g.text.Blocks(), g.reasoning.Blocks())
	g.wrote = int64(n)
	return err
}

// Stopped is why the encoder stopped reading the records (core.Stopper).
func (g *whole) Stopped() error {
	if g.over {
		return errWholeTooLarge(g.max)
	}
	return nil
}

// Fail answers the failure: OpenAI's error object with its status, as
// before the first byte, since no byte went out.
func (g *whole) Fail(f core.Failure) { writeFailure(g.w, f) }

// Wrote is the answer written: one record, its bytes, when.
func (g *whole) Wrote() (records int, bytes int64, first time.Time) {
	if g.at.IsZero() {
		return 0, 0, time.Time{}
	}
	return 1, g.wrote, g.at
}

// gathers reports whether a request without stream for m is gathered
// from the agent's stream (whole) rather than asked for whole
// (Agent.Unary): when m streams, whose whole answer the mapping stage
// would otherwise build.
func gathers(stream bool, m *core.Call) bool {
	return !stream && m.Method != nil && m.Method.Mode.Streaming()
}

// one is b as the blocks of a text: none when empty.
func one(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return [][]byte{b}
}
