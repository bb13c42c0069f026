#!/usr/bin/env python3
"""The agent behind the sidecar's MCP door in proxy/mcp's tests (Python 3
standard library only).

Listens on 127.0.0.1:$PORT (0: any free port) and prints "READY <port>" on
stdout, flushed, once it accepts. Routes (every body is the method's JSON
input):
  POST /ask       {"answer": "you asked: <message>", "words": <count>}
  POST /story     an OpenAI chat completions stream (SSE): one chunk per word
                  of "once upon a time <message>", then [DONE]
  POST /long      an OpenAI chat completions stream of <n> chunks of <size>
                  "x" characters (input fields n and size)
  POST /fail      500 {"detail": "the model is overloaded"}
  POST /fail_late an OpenAI chat stream: one chunk, then an error event
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chunk(text):
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("agent.py " + (fmt % args) + "\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/ask":
            message = body.get("message", "")
            self.json(200, {"answer": "you asked: " + message, "words": len(message.split())})
        elif self.path == "/story":
            words = ("once upon a time " + body.get("message", "")).split(" ")
            self.sse([chunk(w + " ") for w in words if w] + ["[DONE]"])
        elif self.path == "/long":
            size, count = int(body.get("size", 1)), int(body.get("n", 1))
            self.sse([chunk("x" * size) for _ in range(count)] + ["[DONE]"])
        elif self.path == "/fail":
            self.json(500, {"detail": "the model is overloaded"})
        elif self.path == "/fail_late":
            self.sse([chunk("partial "), {"error": {"message": "the model is overloaded"}}])
        else:
            self.json(404, {"detail": "no route " + self.path})

    def json(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for e in events:
            data = e if isinstance(e, str) else json.dumps(e)
            self.wfile.write(("data: " + data + "\n\n").encode())
            self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    server.daemon_threads = True
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
