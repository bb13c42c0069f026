package emulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// standIn is the dev listener's handler as the playground needs it, until
// emulator.New (issue 13's REST emulator) is in this branch: the embedded
// playground files, /playground/methods.json built from cfg (examples
// gives each method's example input), and :query / :streamQuery forwarded
// to the sidecar's own contract routes at contractURL, with the
// platform's error wrapping and ?alt=sse framing. The browser test uses it
// through devHandler only.
func standIn(cfg *config.Config, contractURL string, examples map[string]any) http.Handler {
	files, err := fs.Sub(playground, "playground")
	if err != nil {
		panic(err)
	}
	serve := func(w http.ResponseWriter, name string) {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			http.NotFound(w, nil)
			return
		}
		w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
		w.Header().Set("Cache-Control", "no-store")
		w.Write(b)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serve(w, "index.html") })
	mux.HandleFunc("GET /playground/methods.json", func(w http.ResponseWriter, r *http.Request) {
		type method struct {
			Name    string `json:"name"`
			Mode    string `json:"api_mode"`
			Example any    `json:"example"`
		}
		info := map[string]any{"project": "local", "location": "us-central1", "engine": "local", "api": "v1",
			"preset": cfg.Preset, "adk_app": cfg.ADK.App}
		methods := []method{}
		for _, m := range cfg.Methods {
			if m.Name != "*" {
				methods = append(methods, method{m.Name, string(m.Mode), examples[m.Name]})
			}
		}
		info["methods"] = methods
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(info)
	})
	mux.HandleFunc("GET /playground/{file}", func(w http.ResponseWriter, r *http.Request) { serve(w, r.PathValue("file")) })
	mux.HandleFunc("POST /{api}/projects/{p}/locations/{l}/reasoningEngines/{rest}", func(w http.ResponseWriter, r *http.Request) {
		_, verb, _ := strings.Cut(r.PathValue("rest"), ":")
		route := map[string]string{"query": config.RouteUnary, "streamQuery": config.RouteStream}[verb]
		var in struct {
			ClassMethod  string          `json:"class_method"`
			ClassMethod2 string          `json:"classMethod"`
			Input        json.RawMessage `json:"input"`
		}
		if route == "" || json.NewDecoder(r.Body).Decode(&in) != nil {
			platformError(w, "bad request", "")
			return
		}
		if in.ClassMethod == "" {
			in.ClassMethod = in.ClassMethod2
		}
		if len(in.Input) == 0 {
			in.Input = json.RawMessage("{}")
		}
		body, _ := json.Marshal(map[string]any{"class_method": in.ClassMethod, "input": in.Input})
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, contractURL+route, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			platformError(w, err.Error(), "")
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(resp.Body)
			platformError(w, resp.Status, string(b))
			return
		}
		sse := r.URL.Query().Get("alt") == "sse"
		if route == config.RouteUnary || !sse {
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			io.Copy(w, resp.Body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		lines := bufio.NewReader(resp.Body)
		for {
			line, err := lines.ReadString('\n')
			if line = strings.TrimRight(line, "\n"); line != "" {
				io.WriteString(w, "data: "+line+"\n\n")
				f.Flush()
			}
			if err != nil {
				return
			}
		}
	})
	return mux
}

// platformError answers as the platform does when the container fails.
func platformError(w http.ResponseWriter, status, details string) {
	msg := "Reasoning Engine Execution failed. FAILED_PRECONDITION: " + status + ". Error Details: " + details
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "FAILED_PRECONDITION"}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}
