#!/usr/bin/env python3
"""The agent behind the sidecar's MCP door while the official MCP
conformance suite runs against it (proxy/mcp's TestConformance; Python 3
standard library only). It serves the tools the suite's tools scenarios
call, as the method map in conformance_test.go names them.

Listens on 127.0.0.1:$PORT (0: any free port) and prints "READY <port>" on
stdout, flushed, once it accepts. Routes (every body is the method's JSON
input):
  POST /simple_text  "This is a simple text response for testing." (a JSON
                     string: the tool's text)
  POST /error        500 {"detail": "This tool intentionally returns an error
                     for testing"} (the door's isError result)
  POST /progress     an OpenAI chat completions stream of three chunks about
                     50 ms apart, then [DONE] (a progress notification each)
  POST /echo         the input, as JSON (json_schema_2020_12_tool)
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chunk(text):
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mcpconf agent.py " + (fmt % args) + "\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/simple_text":
            self.json(200, "This is a simple text response for testing.")
        elif self.path == "/error":
            self.json(500, {"detail": "This tool intentionally returns an error for testing"})
        elif self.path == "/progress":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for i, text in enumerate(["0% ", "50% ", "100%"]):
                if i:
                    time.sleep(0.05)
                self.wfile.write(("data: " + json.dumps(chunk(text)) + "\n\n").encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
        elif self.path == "/echo":
            self.json(200, body)
        else:
            self.json(404, {"detail": "no route " + self.path})

    def json(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    server.daemon_threads = True
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
