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
  POST /records   NDJSON: each of the input's records (its JSON), one a line
                  (text records and part records, docs/parts.md)
  POST /record    the input's record, as JSON (a unary reply)
  POST /big       NDJSON: "big:", then one inline_data part of <size> zero
                  bytes as <mime_type> (default application/octet-stream),
                  written 1 MiB of base64 at a time, then "end"
  POST /tiny      NDJSON: <n> inline_data parts of one zero byte
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def big(size, mime_type):
    """The lines of /big: the part's line is written in 1 MiB pieces of
    base64, so the agent holds none of it whole."""
    def part():
        yield b'{"inline_data":{"mime_type":' + json.dumps(mime_type).encode() + b',"data":"'
        groups = size // 3
        piece = b"A" * (1 << 20)
        left = groups * 4
        while left > 0:
            n = min(left, len(piece))
            yield piece[:n]
            left -= n
        rest = size - groups * 3
        if rest:
            yield b"AA==" if rest == 1 else b"AAA="
        yield b'"}}'
    return [b'"big:"', part(), b'"end"']


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
        elif self.path == "/records":
            self.ndjson(json.dumps(r).encode() for r in body.get("records", []))
        elif self.path == "/record":
            self.json(200, body.get("record"))
        elif self.path == "/big":
            self.ndjson(big(int(body.get("size", 1)), body.get("mime_type", "application/octet-stream")))
        elif self.path == "/tiny":
            tiny = b'{"inline_data":{"mime_type":"application/octet-stream","data":"AA=="}}'
            self.ndjson(tiny for _ in range(int(body.get("n", 1))))
        else:
            self.json(404, {"detail": "no route " + self.path})

    def json(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def ndjson(self, lines):
        """Writes lines (bytes, or iterables of bytes: one line in pieces)
        each followed by a newline, then closes the connection."""
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Connection", "close")
        self.end_headers()
        for line in lines:
            for piece in ([line] if isinstance(line, bytes) else line):
                self.wfile.write(piece)
            self.wfile.write(b"\n")
            self.wfile.flush()
        self.close_connection = True

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
