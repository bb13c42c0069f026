// Package testports gives tests the ports of servers that must be told
// their port before they bind it (an agent the sidecar starts, named by
// upstream.url; the ports a docs page shows). Every server that can bind
// :0 and say its address does so instead.
//
// The ports come from below the kernel's ephemeral range (Linux's begins
// at 32768), where :0 listeners and outgoing connections take theirs: a
// port free there now is taken in between only by another explicit bind
// of the same number, not by whatever the machine does meanwhile. Each is
// handed out once per test binary, from a random start, so two test
// binaries running at once seldom meet; a server that finds its port
// taken anyway is started again on another (InUse tells).
package testports

import (
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Free is a port below the ephemeral range that was free when asked.
func Free(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := ports.next()
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatal("no free port below the ephemeral range after 100 tries")
	return 0
}

// InUse reports whether a server's output says its port was taken
// (Python's, Node's and Go's words for EADDRINUSE).
func InUse(output string) bool {
	for _, s := range []string{"Address already in use", "EADDRINUSE", "address already in use"} {
		if strings.Contains(output, s) {
			return true
		}
	}
	return false
}

// ports hands out each port of [lo, hi) once per test binary.
var ports = &portRange{lo: 20000, hi: 32000}

type portRange struct {
	mu     sync.Mutex
	lo, hi int
	n      int // the next port, 0 before the first
}

func (r *portRange) next() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.n = r.lo + rand.IntN(r.hi-r.lo)
	}
	p := r.n
	if r.n++; r.n >= r.hi {
		r.n = r.lo
	}
	return p
}
