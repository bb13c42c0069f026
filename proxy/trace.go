package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// traceFields are the Cloud Logging fields that group a call's log line
// with its trace: from W3C traceparent, else X-Cloud-Trace-Context. The
// trace is "projects/P/traces/T" when the project is known (Cloud Logging
// needs that form to link them), else the bare trace id.
func traceFields(h http.Header, project string) []zap.Field {
	traceID, spanID, sampled := parseTraceparent(h.Get("Traceparent"))
	if traceID == "" {
		traceID, spanID, sampled = parseCloudTrace(h.Get("X-Cloud-Trace-Context"))
	}
	if traceID == "" {
		return nil
	}
	trace := traceID
	if project != "" {
		trace = "projects/" + project + "/traces/" + traceID
	}
	fields := []zap.Field{zap.String("logging.googleapis.com/trace", trace)}
	if spanID != "" {
		fields = append(fields, zap.String("logging.googleapis.com/spanId", spanID))
	}
	return append(fields, zap.Bool("logging.googleapis.com/trace_sampled", sampled))
}

// parseTraceparent reads "00-<32 hex trace id>-<16 hex span id>-<flags>".
func parseTraceparent(v string) (traceID, spanID string, sampled bool) {
	if v == "" {
		return "", "", false
	}
	f := strings.Split(strings.TrimSpace(v), "-")
	if len(f) < 4 || len(f[0]) != 2 || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 || !isHex(f[1]) || !isHex(f[2]) {
		return "", "", false
	}
	if strings.Trim(f[1], "0") == "" {
		return "", "", false // all-zero ids are invalid
	}
	flags, err := strconv.ParseUint(f[3], 16, 8)
	return f[1], f[2], err == nil && flags&1 == 1
}

// parseCloudTrace reads "TRACE_ID/SPAN_ID;o=1" (span id decimal).
func parseCloudTrace(v string) (traceID, spanID string, sampled bool) {
	v = strings.TrimSpace(v)
	rest, opts, _ := strings.Cut(v, ";")
	traceID, span, _ := strings.Cut(rest, "/")
	if len(traceID) != 32 || !isHex(traceID) {
		return "", "", false
	}
	if n, err := strconv.ParseUint(span, 10, 64); err == nil {
		spanID = strconv.FormatUint(n, 16)
		spanID = strings.Repeat("0", 16-len(spanID)) + spanID
	}
	return strings.ToLower(traceID), spanID, opts == "o=1"
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
