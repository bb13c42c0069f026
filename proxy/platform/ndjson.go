package platform

import (
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// NDJSON writes a stream's records to the caller, one compact JSON value
// per line, with the front doors' one flush policy (frames.Writer): records
// that arrived in one read from the agent go out in one write, flushed
// before the records wait for the agent. A failure after the first byte is
// the last line, ErrorLine.
type NDJSON = frames.Writer

// NewNDJSON is the writer of one stream to w.
func NewNDJSON(w http.ResponseWriter) *NDJSON {
	return frames.New(w, "application/json", "", "\n", frames.Hooks{Fail: errorJSON})
}

var _ core.Encoder = (*NDJSON)(nil)
