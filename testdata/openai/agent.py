#!/usr/bin/env python3
"""The agent behind proxy/openai's tests (Python 3 standard library only).

Listens on 127.0.0.1 on a free port and prints "READY <port>" once it
accepts. Every route reads the sidecar's JSON body, {"message": …,
"messages": […], "ids": {…}}, and streams in one framework's dialect, one flushed
chunk per event (HTTP/1.1 chunked):

  POST /chat            OpenAI Chat Completions SSE: reasoning_content, then
                        "echo: <message>" in two content deltas, [DONE]
  POST /vercel          the Vercel AI SDK's UI message stream (v1): reasoning,
                        then the same text in text-delta parts, [DONE]
  POST /fail            Chat Completions SSE: "partial " then an in-band error
  POST /unary           one JSON object {"text": "echo: <message>"}
  POST /input           one JSON object: {"got": <the body>, "authorization":
                        <the Authorization header, or null>}
  POST /big/<n>         Chat Completions SSE: n content deltas of 1 KiB each
  POST /hold            Chat Completions SSE: one content delta, then nothing
                        until the caller goes
  POST /ask             Chat Completions SSE: "Let me check. " then the question
                        {"input_required": …} (kind url); a body whose message
                        is the answer (the next user turn) gets "answered:
                        <message> after <the ids>"
  POST /ask_unary       one JSON object: the question alone (kind form)
  POST /parts           Chat Completions SSE with parts that are not text
                        between its text: "Here is the chart:", an inline
                        PNG (PNG, chart.png), " and the report ", a
                        file_data PDF at https://example.com/r(1).pdf, a data
                        part {"total": 12.5}
  POST /echo_parts      Chat Completions SSE: "got <n> parts", then each of
                        the body's parts as it came, a part record each
  POST /big_part/<n>    Chat Completions SSE: "big ", then an inline PNG of
                        n bytes
  POST /down            500 with an error body
  POST /replay/<d>/<c>  the capture testdata/dialects/captures/<d>/<c>.txt
                        (an HTTP response: its headers, then its body, one
                        chunk per event)
"""

import base64
import json
import os
import select
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dialects", "captures")


# A 1x1 PNG, base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def chat_chunk(delta, finish=None):
    return {"id": "chatcmpl-agent", "object": "chat.completion.chunk", "created": 1, "model": "agent-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("agent.py %s\n" % (fmt % args))

    def start(self, ctype, headers=()):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, *values):
        for v in values:
            self.chunk("data: %s\n\n" % (v if isinstance(v, str) else json.dumps(v)))

    def fixed(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.loads(raw or b"{}")
        message = body.get("message", "") if isinstance(body, dict) else ""
        path = self.path
        if path == "/chat":
            self.start("text/event-stream")
            self.sse(chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"reasoning_content": "thinking"}),
                     chat_chunk({"content": "echo: "}), chat_chunk({"content": message}), chat_chunk({}, "stop"), "[DONE]")
            self.end()
        elif path == "/vercel":
            self.start("text/event-stream", [("x-vercel-ai-ui-message-stream", "v1")])
            self.sse({"type": "start"}, {"type": "start-step"},
                     {"type": "reasoning-start", "id": "r1"}, {"type": "reasoning-delta", "id": "r1", "delta": "thinking"},
                     {"type": "reasoning-end", "id": "r1"},
                     {"type": "text-start", "id": "t1"}, {"type": "text-delta", "id": "t1", "delta": "echo: "},
                     {"type": "text-delta", "id": "t1", "delta": message}, {"type": "text-end", "id": "t1"},
                     {"type": "finish-step"}, {"type": "finish"}, "[DONE]")
            self.end()
        elif path == "/fail":
            self.start("text/event-stream")
            self.sse(chat_chunk({"role": "assistant", "content": "partial "}),
                     {"error": {"message": "the model is overloaded", "type": "server_error"}})
            self.end()
        elif path == "/unary":
            self.fixed({"text": "echo: " + message})
        elif path == "/input":
            self.fixed({"got": body, "authorization": self.headers.get("Authorization")})
        elif path == "/hold":
            self.start("text/event-stream")
            self.sse(chat_chunk({"role": "assistant", "content": "held "}))
            # Readable once the caller (the sidecar) closes the connection.
            select.select([self.connection], [], [], 120)
            self.close_connection = True
        elif path == "/ask":
            self.start("text/event-stream")
            if message == "hi":
                self.sse(chat_chunk({"role": "assistant", "content": "Let me check. "}),
                         {"input_required": {"message": "Sign in to pick the account.", "kind": "url",
                                             "url": "https://example.com/pick", "id": "q1"}}, "[DONE]")
            else:
                self.sse(chat_chunk({"content": "answered: %s after %s" % (message, json.dumps(sorted(body.get("ids", {}))))}),
                         chat_chunk({}, "stop"), "[DONE]")
            self.end()
        elif path == "/ask_unary":
            self.fixed({"input_required": {"message": "Which account?", "id": "q2",
                                           "schema": {"type": "object", "properties": {"account": {"type": "string"}}}}})
        elif path == "/parts":
            self.start("text/event-stream")
            self.sse(chat_chunk({"role": "assistant", "content": "Here is the chart:"}),
                     {"inline_data": {"mime_type": "image/png", "data": PNG, "display_name": "chart.png"}},
                     chat_chunk({"content": " and the report "}),
                     {"file_data": {"mime_type": "application/pdf", "file_uri": "https://example.com/r(1).pdf",
                                    "display_name": "report.pdf"}},
                     {"data": {"total": 12.5}},
                     chat_chunk({}, "stop"), "[DONE]")
            self.end()
        elif path == "/echo_parts":
            parts = body.get("parts", [])
            self.start("text/event-stream")
            self.sse(chat_chunk({"role": "assistant", "content": "got %d parts" % len(parts)}), *parts)
            self.sse(chat_chunk({}, "stop"), "[DONE]")
            self.end()
        elif path.startswith("/big_part/"):
            n = int(path[len("/big_part/"):])
            data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * max(0, n - 8)).decode()
            self.start("text/event-stream")
            self.sse(chat_chunk({"role": "assistant", "content": "big "}),
                     {"inline_data": {"mime_type": "image/png", "data": data}}, "[DONE]")
            self.end()
        elif path == "/down":
            body = b'{"error": "the agent is down"}'
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path.startswith("/big/"):
            self.start("text/event-stream")
            for _ in range(int(path[len("/big/"):])):
                self.sse(chat_chunk({"content": "x" * 1024}))
            self.sse("[DONE]")
            self.end()
        elif path.startswith("/replay/"):
            with open(os.path.join(CAPTURES, path[len("/replay/"):] + ".txt"), "rb") as f:
                capture = f.read()
            head, _, events = capture.partition(b"\r\n\r\n")
            headers = []
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.decode().partition(":")
                if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                    headers.append((k, v.strip()))
            self.send_response(200)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in events.split(b"\n\n"):
                if event.strip():
                    self.chunk(event + b"\n\n")
            self.end()
        else:
            self.send_error(404)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("READY %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
