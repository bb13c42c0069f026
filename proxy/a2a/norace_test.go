//go:build !race

package a2a

// raceEnabled: the race detector is on (race_test.go).
const raceEnabled = false
