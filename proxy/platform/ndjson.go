package platform

import (
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// NewNDJSON is the writer of one stream's records to w, one compact JSON
// value per line, with the front doors' one flush policy (frames.Writer):
// records that arrived in one read from the agent go out in one write,
// flushed before the records wait for the agent. A failure after the first
// byte is the last line, ErrorLine.
func NewNDJSON(w http.ResponseWriter) *frames.Writer {
	return frames.New(w, "application/json", "", "\n", frames.Hooks{Fail: errorJSON})
}
