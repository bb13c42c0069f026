package supervise

import (
	"io"
	"os"
	"time"
)

// outputWait is how long output may keep flowing once the agent has exited
// for good: leftover children of the agent may hold its stdout open, and
// Done must not wait for them.
const outputWait = time.Second

// outputs are the child's stdin, stdout and stderr, shared by every run, and
// the goroutines copying its output to writers that are not files.
type outputs struct {
	files   [3]*os.File   // what each child gets as fds 0, 1 and 2
	owned   []*os.File    // ours to close at the end: /dev/null, pipes' write ends
	readers []*os.File    // pipes' read ends, one copying goroutine each
	copied  chan struct{} // one send per copying goroutine as it ends
}

// openOutputs prepares the child's fds: stdin is /dev/null; stdout and
// stderr are the files themselves, /dev/null for nil, or a pipe copied to
// the writer. The same writer for both gets one pipe, so its lines
// interleave as written.
func openOutputs(stdout, stderr io.Writer) (*outputs, error) {
	o := &outputs{copied: make(chan struct{}, 2)}
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	o.owned = append(o.owned, devNull)
	o.files[0] = devNull
	if o.files[1], err = o.open(stdout, devNull); err != nil {
		o.close(0)
		return nil, err
	}
	if sameWriter(stdout, stderr) {
		o.files[2] = o.files[1]
	} else if o.files[2], err = o.open(stderr, devNull); err != nil {
		o.close(0)
		return nil, err
	}
	return o, nil
}

func (o *outputs) open(w io.Writer, devNull *os.File) (*os.File, error) {
	f, isFile := w.(*os.File)
	switch {
	case w == nil, isFile && f == nil:
		return devNull, nil
	case isFile:
		return f, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o.owned = append(o.owned, pw)
	o.readers = append(o.readers, r)
	go func() {
		copyOutput(w, r)
		o.copied <- struct{}{}
	}()
	return pw, nil
}

// copyOutput copies r to w until r ends. When w fails it keeps reading, into
// nothing, so the child never blocks on a full pipe.
func copyOutput(w io.Writer, r io.Reader) {
	if _, err := io.Copy(w, r); err != nil {
		io.Copy(io.Discard, r)
	}
}

// close closes our ends of the child's fds, lets the copying goroutines
// drain what the child wrote for up to wait, then cuts the pipes and waits
// for the goroutines to end.
func (o *outputs) close(wait time.Duration) {
	for _, f := range o.owned {
		f.Close()
	}
	n := len(o.readers)
	t := time.NewTimer(wait)
	defer t.Stop()
	for n > 0 {
		select {
		case <-o.copied:
			n--
		case <-t.C:
			for _, r := range o.readers {
				r.Close() // a pollable pipe: Close ends a blocked Read
			}
		}
	}
	for _, r := range o.readers {
		r.Close()
	}
}

// sameWriter reports whether a and b are the same writer; writers of a type
// that cannot be compared are taken as different.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
