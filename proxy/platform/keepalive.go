package platform

import (
	"net/http"
	"strconv"
)

// keepAlive answers the keep-alive probe (config.KeepAlive) that Agent
// Platform's deploymentSpec.keepAliveProbe asks: 200 while a call on any
// door of this process is in flight (inFlight, proxy.Server.InFlight),
// so the platform keeps the container up rather than lose the call; 503
// when none is, the platform's "no work" (any non-2xx is). The body says
// the same for a person reading it. The probe is not a call: it is not
// counted in flight nor logged, as the health routes are not.
type keepAlive struct {
	inFlight func() int64
}

func (k keepAlive) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := k.inFlight()
	code, body := http.StatusServiceUnavailable, `{"busy":false,"calls":0}`
	if n > 0 {
		code, body = http.StatusOK, `{"busy":true,"calls":`+strconv.FormatInt(n, 10)+`}`
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	w.Write([]byte(body))
}
