package openai

import (
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// encoder is the shared stream writer (frames.Writer: its framing, its one
// flush policy, the door's opening and closing frames) writing one frame
// per piece of the answer: records that add none (a tool call, the end)
// write nothing.
type encoder struct {
	*frames.Writer
	// frame appends the data of p's frame to dst; nil: p writes none.
	frame func(dst []byte, p piece) []byte
	// stop, if set, is why the encoder stopped reading the records (a
	// cap of its own), nil while it reads on.
	stop func() error
	// other, if set, is given each record that is no piece (the end).
	other func(record []byte)
}

// Copy writes r's pieces, each its frame, until r ends or stop says why
// it stopped.
func (e *encoder) Copy(r core.Records) error {
	f := &frameRecords{in: r, frame: e.frame, stop: e.stop, other: e.other}
	if w, ok := r.(core.Waiter); ok {
		return e.Writer.Copy(&waitingRecords{frameRecords: f, w: w})
	}
	return e.Writer.Copy(f)
}

// frameRecords are the frames of the pieces of the records in: each
// record that is a piece of the answer becomes its frame's data.
type frameRecords struct {
	in    core.Records
	frame func(dst []byte, p piece) []byte
	stop  func() error
	other func(record []byte)
	cur   []byte
}

func (f *frameRecords) Next() bool {
	for f.Err() == nil && f.in.Next() {
		if core.Control(f.in) {
			continue
		}
		p, ok := pieceOf(f.in.Record())
		if !ok {
			if f.other != nil {
				f.other(f.in.Record())
			}
			continue
		}
		if b := f.frame(f.cur[:0], p); b != nil {
			f.cur = b
			return true
		}
	}
	return false
}

func (f *frameRecords) Record() []byte { return f.cur }

func (f *frameRecords) Err() error {
	if f.stop != nil {
		if err := f.stop(); err != nil {
			return err
		}
	}
	return f.in.Err()
}

// Stopped is why the encoder stopped reading the records, nil if it did
// not (core.Stopper).
func (e *encoder) Stopped() error {
	if e.stop == nil {
		return nil
	}
	return e.stop()
}
func (f *frameRecords) Close() { f.in.Close() }

// waitingRecords are frameRecords of records that say when they wait
// for the agent, which they pass on to the writer.
type waitingRecords struct {
	*frameRecords
	w core.Waiter
}

func (r *waitingRecords) BeforeWait(f func()) { r.w.BeforeWait(f) }

// pieces are the records of a unary output written as a stream: its
// reasoning, then its text, each one record.
type pieces struct {
	records [][]byte
	cur     []byte
}

func newPieces(text, reasoning []byte) *pieces {
	p := &pieces{}
	if len(reasoning) > 0 {
		p.records = append(p.records, append(append([]byte(`{"reasoning":"`), reasoning...), `"}`...))
	}
	if len(text) > 0 {
		p.records = append(p.records, append(append([]byte(`{"text":"`), text...), `"}`...))
	}
	return p
}

func (p *pieces) Next() bool {
	if len(p.records) == 0 {
		return false
	}
	p.cur, p.records = p.records[0], p.records[1:]
	return true
}
func (p *pieces) Record() []byte { return p.cur }
func (p *pieces) Err() error     { return nil }
func (p *pieces) Close()         {}

var (
	_ core.Encoder = (*encoder)(nil)
	_ core.Stopper = (*encoder)(nil)
	_ core.Records = (*frameRecords)(nil)
	_ core.Waiter  = (*waitingRecords)(nil)
	_ core.Records = (*pieces)(nil)
)
