//go:build race

package a2a

// raceEnabled: the race detector is on. Its sync.Pool drops buffers at
// random, so allocation counts are not the program's: the allocation
// bounds are checked without it.
const raceEnabled = true
