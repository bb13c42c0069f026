package devapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestPassthroughFullDuplex: the contract listener's answer begins
// before the caller has sent all of its body, and the body still goes
// on through the passthrough to the end. Half duplex, the dev listener
// reads the rest of a body itself once the answer begins and closes it
// under the transport still sending it on, which then drops its
// connection to the contract listener with the answer on it (a stream
// cut after its first record, 1 run in 2 of TestOnePort's passthrough);
// here, where the caller sends the rest only once it has the answer's
// head, the answer never begins.
func TestPassthroughFullDuplex(t *testing.T) {
	contract := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "{\"got\":%q,\"err\":%q}\n", b, fmt.Sprint(err))
	}))
	defer contract.Close()
	dev := httptest.NewServer(New(newStackConfig(t), contract.URL, Options{}))
	defer dev.Close()
	// Keep-alive, as callers are: a caller that closes the connection
	// after the call leaves a server nothing to read the body for.
	transport := &http.Transport{Proxy: nil}
	defer transport.CloseIdleConnections()

	body, send := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, dev.URL+through("/api/stream_reasoning_engine"), body)
	req.ContentLength = int64(len(`{"first":"half"}`))
	go send.Write([]byte(`{"first":`))
	// The head comes at once or never (the caller holds the rest of its
	// body until it has it): the bound is the behaviour. Ending the body
	// ends the call, which waits for it.
	late := time.AfterFunc(10*time.Second, func() { send.CloseWithError(errors.New("no answer's head within 10s")) })
	resp, err := transport.RoundTrip(req)
	if !late.Stop() || err != nil {
		send.Close()
		t.Fatalf("no answer's head while the caller's body is open (%v): the passthrough is not full duplex", err)
	}
	defer resp.Body.Close()
	send.Write([]byte(`"half"}`))
	send.Close()
	got, err := io.ReadAll(resp.Body)
	if want := `{"got":"{\"first\":\"half\"}","err":"<nil>"}` + "\n"; err != nil || string(got) != want {
		t.Errorf("the answer = %q, %v; want %q: the whole body, read after the answer began", got, err, want)
	}
}
