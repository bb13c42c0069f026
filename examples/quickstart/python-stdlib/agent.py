import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Agent(BaseHTTPRequestHandler):  # HTTP/1.0: each answer ends when the connection closes
    def do_GET(self):  # the sidecar's readiness probe
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["message"]
        self.send_response(200)
        if self.path == "/query":
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"text": "Echo: " + message}).encode())
        else:  # /stream: call your model here, one event per token
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for word in message.split():
                self.wfile.write(b"data: %s\n\n" % json.dumps({"text": word + " "}).encode())
                self.wfile.flush()


port = int(os.environ.get("PORT", "8000"))  # the sidecar sets PORT to its upstream's port
ThreadingHTTPServer(("127.0.0.1", port), Agent).serve_forever()
