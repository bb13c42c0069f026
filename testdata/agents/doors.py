#!/usr/bin/env python3
"""The agent behind every door at once, for cmd/sidecar's TestOnePort
(Python 3 standard library only): the routes the MCP, OpenAI, A2A and
AgentCore doors' clients and the platform's own client call.

Listens on 127.0.0.1:$PORT and prints "READY" on stdout, flushed, once it
accepts. Every body is the method's JSON input; <message> is its
"message".
  POST /ask        {"answer": "you asked: <message>", "words": <count>}
  POST /story      an OpenAI chat completions stream (SSE): a chunk per word
                   of "once upon a time <message>", then [DONE]
  POST /chat       an OpenAI chat completions stream: the role, reasoning
                   "thinking", then "echo: " and <message>, finish "stop", [DONE]
  POST /long       a chat stream of <n> chunks of <size> "x" characters
  POST /fail       500 {"detail": "the model is overloaded"}
  POST /fail_late  a chat stream: one chunk, then an in-band error
  POST /echo       {"input": <the body>, "content_type": <its Content-Type>}
  POST /stream     ndjson: input.lines lines {"n": i, "text": "line i"}; with
                   input.hold each line after the first waits for a POST
                   /release (@google-cloud/aiplatform's client.js sends them)
  POST /release    lets one held /stream line go
  POST /release/<key>  lets the held stream of <key> go on
  POST /headers    what this request's headers say of its caller:
                   {"authorization": <its Authorization, or null>, "user":
                   <X-User-Id>, "scopes": <X-User-Scopes>, "client":
                   <X-Client-Id>, "authorized": <how many requests so far
                   carried an Authorization header>} (cmd/sidecar's
                   TestOAuthClients: the sidecar never forwards a token)

Holding: on /story and /chat, a <message> "hold-<key>" holds the stream
after its first word ("once ", "echo: ") until POST /release/<key>, then
sends "released " (or, when nobody released it within HOLD_LIMIT,
"unreleased "): a test that reads "released" knows its client had the
first word while the agent still held the rest, with no clock involved
but the bound on a hang.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOLD_LIMIT = 30.0  # seconds a held stream waits for its release

_lock = threading.Lock()
_held = {}  # key -> threading.Event
_lines = threading.Semaphore(0)
_authorized = 0  # requests that carried an Authorization header


def held(key):
    """The event that releases the stream of key."""
    with _lock:
        return _held.setdefault(key, threading.Event())


def chunk(delta, finish=None):
    return {"id": "chatcmpl-agent", "object": "chat.completion.chunk", "created": 1, "model": "agent-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("doors.py %s\n" % (fmt % args))

    def reply(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def start(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def write(self, data):
        data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, first, rest, hold):
        """Streams the events first, then (after the hold, when there is
        one) the events rest."""
        self.start("text/event-stream")
        for e in first:
            self.write("data: %s\n\n" % json.dumps(e))
        if hold:
            released = held(hold).wait(HOLD_LIMIT)
            rest = [chunk({"content": "released " if released else "unreleased "})] + rest
        for e in rest:
            self.write("data: %s\n\n" % (e if isinstance(e, str) else json.dumps(e)))
        self.end()

    def do_POST(self):
        global _authorized
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "Authorization" in self.headers:
            with _lock:
                _authorized += 1
        if self.path == "/headers":
            h = self.headers
            return self.reply(200, {"authorization": h.get("Authorization"), "user": h.get("X-User-Id"),
                                    "scopes": h.get("X-User-Scopes"), "client": h.get("X-Client-Id"),
                                    "authorized": _authorized})
        if self.path == "/release":
            _lines.release()
            return self.reply(200, {})
        if self.path.startswith("/release/"):
            held(self.path[len("/release/"):]).set()
            return self.reply(200, {})
        body = json.loads(raw or b"{}")
        message = body.get("message", "") if isinstance(body, dict) else ""
        if not isinstance(message, str):
            message = json.dumps(message)
        hold = message[len("hold-"):] if message.startswith("hold-") else ""
        try:
            if self.path == "/ask":
                self.reply(200, {"answer": "you asked: " + message, "words": len(message.split())})
            elif self.path == "/story":
                words = [w + " " for w in ("once upon a time " + message).split(" ") if w]
                self.sse([chunk({"content": words[0]})], [chunk({"content": w}) for w in words[1:]] + ["[DONE]"], hold)
            elif self.path == "/chat":
                self.sse([chunk({"role": "assistant", "content": ""}), chunk({"reasoning_content": "thinking"}),
                          chunk({"content": "echo: "})], [chunk({"content": message}), chunk({}, "stop"), "[DONE]"], hold)
            elif self.path == "/long":
                size, n = int(body.get("size", 1)), int(body.get("n", 1))
                self.sse([chunk({"content": "x" * size}) for _ in range(n)], ["[DONE]"], "")
            elif self.path == "/fail":
                self.reply(500, {"detail": "the model is overloaded"})
            elif self.path == "/fail_late":
                self.sse([chunk({"content": "partial "})], [{"error": {"message": "the model is overloaded"}}], "")
            elif self.path == "/echo":
                self.reply(200, {"input": body, "content_type": self.headers.get("Content-Type")})
            elif self.path == "/stream":
                self.start("application/x-ndjson")
                for i in range(int(body.get("lines", 1))):
                    if i > 0 and body.get("hold") and not _lines.acquire(timeout=HOLD_LIMIT):
                        self.close_connection = True
                        return
                    self.write(json.dumps({"n": i, "text": "line %d" % i}) + "\n")
                self.end()
            else:
                self.reply(404, {"detail": "no route " + self.path})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT") or 0)), Handler)
    server.daemon_threads = True
    print("READY", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
