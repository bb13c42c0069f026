#!/usr/bin/env python3
"""The agent behind the sidecar's A2A door in proxy/a2a's parts tests
(Python 3 standard library only): parts that are not text, both ways
(docs/parts.md).

Listens on 127.0.0.1:$PORT (0: any free port) and prints "READY <port>" on
stdout, flushed, once it accepts. Routes (every body is the method's JSON
input: message, messages, parts, ids):
  POST /echo   SSE: a text record saying what parts it got, one line a
               part ("inline <mime_type> <display_name> <bytes decoded>",
               "file <mime_type> <file_uri>", "data <JSON>"), then each
               of its parts back as it got them, then an image it makes
               (a PNG, dot.png), then the text "done"
  POST /image  SSE: the text "here:", then an image/png of <size> bytes
               (input field size, default 5 MiB; a PNG signature, then
               zeros), then the text "done"
  POST /bad    SSE: the text "here:", then a part whose mime_type holds a
               CR LF
  POST /unary  JSON: the image dot.png as the whole output (a part record)
  POST /chat   SSE: OpenAI Chat Completions chunks saying "look:", the
               image dot.png between them (a part record), then [DONE]
"""

import base64
import json
import os
import sys
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def png():
    """A 1x1 PNG, made here."""
    def chunk(kind, data):
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")
    ihdr = (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes([8, 6, 0, 0, 0])
    idat = zlib.compress(b"\x00\xff\x00\x00\xff")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


DOT = {"inline_data": {"mime_type": "image/png", "display_name": "dot.png",
                       "data": base64.b64encode(png()).decode()}}


def describe(p):
    if "inline_data" in p:
        d = p["inline_data"]
        size = len(base64.b64decode(d["data"], validate=True))
        return "inline %s %s %d" % (d["mime_type"], d.get("display_name", "-"), size)
    if "file_data" in p:
        d = p["file_data"]
        return "file %s %s" % (d.get("mime_type", "-"), d["file_uri"])
    return "data " + json.dumps(p["data"], separators=(",", ":"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("parts.py " + (fmt % args) + "\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        parts = body.get("parts", [])
        if self.path == "/echo":
            said = "got %d parts:" % len(parts) + "".join("\n" + describe(p) for p in parts)
            self.sse([{"text": said}] + parts + [DOT, {"text": "done"}])
        elif self.path == "/image":
            size = int(body.get("size", 5 << 20))
            image = b"\x89PNG\r\n\x1a\n" + bytes(max(size - 8, 0))
            self.sse([{"text": "here:"},
                      {"inline_data": {"mime_type": "image/png", "data": base64.b64encode(image).decode()}},
                      {"text": "done"}])
        elif self.path == "/bad":
            self.sse([{"text": "here:"},
                      {"inline_data": {"mime_type": "image/png\r\nX-Injected: 1", "data": DOT["inline_data"]["data"]}}])
        elif self.path == "/chat":
            def chunk(delta, finish=None):
                return {"id": "c1", "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.sse([chunk({"content": "look:"}), DOT, chunk({}, "stop"), "[DONE]"])
        elif self.path == "/unary":
            self.json(200, DOT)
        else:
            self.json(404, {"detail": "no route " + self.path})

    def json(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def sse(self, records):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for r in records:
            data = r if isinstance(r, str) else json.dumps(r, separators=(",", ":"))
            self.wfile.write(b"data: " + data.encode() + b"\n\n")
            self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
