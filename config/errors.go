package config

import (
	"fmt"
	"strings"
)

// Errors is every problem found in one method map, in line order. Parse
// and Load return it as a *Errors.
type Errors struct {
	// File names the method map in messages, e.g. "sidecar.yaml".
	File string
	// Problems in line order; problems on one line keep the order they
	// were found in.
	Problems []Problem
}

// Problem is one thing wrong with a method map.
type Problem struct {
	// Line is 1-based; 0 means the file as a whole (it is empty, say).
	Line int
	// Path is the dotted key path, e.g. "methods.query.mode"; "" for the
	// file as a whole.
	Path string
	// Msg says what is wrong and what is allowed.
	Msg string
}

// Error prints one problem a line: "name:LINE: key.path: message".
func (e *Errors) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}
