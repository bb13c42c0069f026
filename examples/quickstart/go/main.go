// The smallest net/http agent: a unary route and a streaming one.
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"os"
	"strings"
)

// message is the input's text: the sidecar sends {"message": "…"}.
func message(r *http.Request) string {
	var in struct{ Message string }
	json.NewDecoder(r.Body).Decode(&in)
	return in.Message
}

func main() {
	http.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {}) // the sidecar's readiness probe: 200
	http.HandleFunc("POST /query", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"text": "Echo: " + message(r)})
	})
	http.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		// Call your model here: a JSON line per token, each flushed (through
		// the writer's http.Flusher) so it goes now, not when a buffer fills.
		rc := http.NewResponseController(w)
		for _, word := range strings.Fields(message(r)) {
			json.NewEncoder(w).Encode(map[string]string{"text": word + " "})
			if rc.Flush() != nil {
				return // the sidecar has gone: the call was cancelled
			}
		}
	})
	port := os.Getenv("PORT") // the sidecar sets it to its upstream's port
	if port == "" {
		port = "8000"
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
