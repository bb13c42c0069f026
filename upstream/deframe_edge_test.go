package upstream

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestDeframeLinesCRLFAtCap: a line whose content is exactly the record
// cap, ended by "\r\n", is a record however the reply is split across
// reads, also when the "\r" is the last byte a full read buffer holds
// (caps one under a multiple of the buffer); one byte more is
// core.ErrRecordTooLarge, split anywhere.
func TestDeframeLinesCRLFAtCap(t *testing.T) {
	for _, max := range []int{readBufferSize - 1, 2*readBufferSize - 1, readBufferSize, 100} {
		for _, over := range []bool{false, true} {
			content := strings.Repeat("1", max)
			if over {
				content += "1"
			}
			data := []byte(content + "\r\n2\n")
			want, wantErr := []string{content, "2"}, error(nil)
			if over {
				want, wantErr = nil, core.ErrRecordTooLarge
			}
			t.Run(fmt.Sprintf("cap %d over %v", max, over), func(t *testing.T) {
				for at := 0; at <= len(data); at++ {
					got, err := deframe(FormatLines, splitAt(data, at), max)
					if !errors.Is(err, wantErr) || wantErr == nil && err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
						t.Fatalf("split at %d of %d: %d records %.20q…, %v; want %d records, %v", at, len(data), len(got), got, err, len(want), wantErr)
					}
				}
			})
		}
	}
}
