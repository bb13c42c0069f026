package upstream

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The fuzz targets feed each deframer arbitrary replies, read once whole
// and again split where the fuzzer's seed says, and sometimes under a
// small record cap. No input may panic, every record must be one compact
// JSON value on one line, and the two readings must agree record for
// record (for text, character for character): nothing lost, nothing
// duplicated, nothing torn (lesson 8 in DESIGN.md). SSE, lines and text
// are also checked against a plain reading of the whole reply at once.

func FuzzSSE(f *testing.F) {
	fuzzDeframe(f, FormatSSE, func(t *testing.T, reply []byte, maxRecord int, got []string, gotErr error) {
		want, wantErr := referenceSSE(reply, maxRecord)
		if errText(gotErr) != errText(wantErr) || render(got, nil) != render(want, nil) {
			t.Errorf("deframe(sse, %q) =\n%s\nwant (reference)\n%s", reply, render(got, gotErr), render(want, wantErr))
		}
	})
}

func FuzzLines(f *testing.F) {
	fuzzDeframe(f, FormatLines, func(t *testing.T, reply []byte, maxRecord int, got []string, gotErr error) {
		want, wantErr := referenceLines(reply, maxRecord)
		if errText(gotErr) != errText(wantErr) || render(got, nil) != render(want, nil) {
			t.Errorf("deframe(ndjson, %q) =\n%s\nwant (reference)\n%s", reply, render(got, gotErr), render(want, wantErr))
		}
	})
}

func FuzzJSONValues(f *testing.F) {
	fuzzDeframe(f, FormatJSON, nil)
}

func FuzzText(f *testing.F) {
	fuzzDeframe(f, FormatText, func(t *testing.T, reply []byte, maxRecord int, got []string, gotErr error) {
		text := outputText(t, got)
		want := string(appendValidUTF8(nil, bytes.TrimPrefix(reply, utf8BOM)))
		switch {
		case gotErr == nil && text != want:
			t.Errorf("deframe(text, %q) text = %q, want %q", reply, text, want)
		case gotErr != nil && (!errors.Is(gotErr, core.ErrRecordTooLarge) || !strings.HasPrefix(want, text)):
			t.Errorf("deframe(text, %q) = %q, %v, want a prefix of %q, %v", reply, text, gotErr, want, core.ErrRecordTooLarge)
		}
	})
}

// fuzzDeframe runs a fuzz target for format, seeded from its golden
// inputs; check, if set, compares the records with a reference.
func fuzzDeframe(f *testing.F, format Format, check func(t *testing.T, reply []byte, maxRecord int, got []string, gotErr error)) {
	for i, in := range goldenInputs(f, format) {
		f.Add(in.data, uint64(i))
	}
	f.Fuzz(func(t *testing.T, reply []byte, seed uint64) {
		// An odd seed also sets a small cap, to reach the limit paths.
		maxRecord := 0
		if seed&1 == 1 {
			maxRecord = 16 + int(seed>>1%512)
		}
		want, wantErr := deframe(format, bytes.NewReader(reply), maxRecord)
		checkRecords(t, want)
		got, gotErr := deframe(format, randomSplit(reply, seed), maxRecord)
		sameStream(t, format, "split reads", want, wantErr, got, gotErr)
		checkCloseEnd(t, format, reply, seed, maxRecord, want, wantErr)
		if check != nil {
			check(t, reply, maxRecord, want, wantErr)
		}
	})
}

// checkCloseEnd deframes reply as a reply that only a close ended, whole
// and split, and checks it against the clean reading (want, wantErr): the
// same, or the same but for the last record, dropped, and a cut record
// error instead of the clean end.
func checkCloseEnd(t *testing.T, format Format, reply []byte, seed uint64, maxRecord int, want []string, wantErr error) {
	t.Helper()
	got, gotErr := deframeClosed(format, bytes.NewReader(reply), maxRecord)
	checkRecords(t, got)
	split, splitErr := deframeClosed(format, randomSplit(reply, seed), maxRecord)
	sameStream(t, format, "close-delimited, split reads", got, gotErr, split, splitErr)
	same := errText(gotErr) == errText(wantErr) && render(got, nil) == render(want, nil)
	cut := errors.Is(gotErr, errCutRecord) && len(got) >= len(want)-1 && len(got) <= len(want) &&
		render(got, nil) == render(want[:len(got)], nil)
	if format == FormatText && errors.Is(gotErr, errCutRecord) {
		// The bytes of an incomplete last character, each U+FFFD in
		// the clean reading, perhaps one record each under a small cap.
		text, whole := outputText(t, got), outputText(t, want)
		dropped, ok := strings.CutPrefix(whole, text)
		cut = ok && wantErr == nil && dropped != "" && strings.Trim(dropped, "\uFFFD") == "" && len(dropped) < utf8.UTFMax*len("\uFFFD")
	}
	if !same && !cut {
		t.Errorf("deframe(%s, %q) close-delimited =\n%s\nwant as clean\n%s\nor that without its last record and %v",
			format, reply, render(got, gotErr), render(want, wantErr), errCutRecord)
	}
}

// referenceSSE parses an event stream the plain way, all of it at once,
// as the WHATWG standard words it, and turns each event into a record
// with the stream's own dispatch.
func referenceSSE(reply []byte, maxRecord int) ([]string, error) {
	if maxRecord <= 0 {
		maxRecord = defaultMaxRecord
	}
	text := strings.TrimPrefix(string(reply), string(utf8BOM))
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	cut := lines[len(lines)-1] // a last line without its line end
	lines = lines[:len(lines)-1]
	s := &sseStream{frame: frame{max: maxRecord}}
	var records, data []string
	hasData, event := false, ""
	// dispatch reports whether the stream goes on.
	dispatch := func() bool {
		joined := strings.Join(data, "\n")
		if len(joined) > maxRecord {
			s.stop(core.ErrRecordTooLarge)
			return false
		}
		s.data = append(s.data[:0], joined...)
		s.hasData = true
		s.eventLen = min(len(event), len(s.event)+1)
		copy(s.event[:], event)
		data, hasData, event = data[:0], false, ""
		if !s.dispatch() {
			return false
		}
		records = append(records, string(s.Record()))
		return true
	}
	for _, line := range lines {
		if line == "" {
			if hasData && !dispatch() {
				return records, s.err
			}
			event = ""
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data, hasData = append(data, value), true
		case "event":
			event = value
		}
	}
	// A data or event line cut short, or a name that could still have
	// become one, fails the stream; a comment or another field does not.
	name, value, colon := strings.Cut(cut, ":")
	switch {
	case colon && name == "data":
		data = append(data, strings.TrimPrefix(value, " "))
		if len(strings.Join(data, "\n")) > maxRecord {
			return records, core.ErrRecordTooLarge
		}
		return records, errCutRecord
	case colon && name == "event",
		!colon && name != "" && (strings.HasPrefix("data", name) || strings.HasPrefix("event", name)):
		return records, errCutRecord
	}
	if hasData && !dispatch() {
		return records, s.err
	}
	return records, nil
}

// referenceLines splits the whole reply into lines at once.
func referenceLines(reply []byte, maxRecord int) ([]string, error) {
	if maxRecord <= 0 {
		maxRecord = defaultMaxRecord
	}
	lines := bytes.Split(bytes.TrimPrefix(reply, utf8BOM), []byte("\n"))
	f := &frame{max: maxRecord}
	var records []string
	for i, line := range lines {
		last := i == len(lines)-1 // the line after the last "\n"
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > maxRecord {
			return records, core.ErrRecordTooLarge
		}
		line = bytes.TrimLeft(line, recordSeparator)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !f.setJSON(line) {
			if last {
				return records, errCutRecord // only complete JSON may end without "\n"
			}
			f.setOutput(line)
		}
		if !f.yield() {
			return records, f.err
		}
		records = append(records, string(f.Record()))
	}
	return records, nil
}
