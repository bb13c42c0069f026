#!/usr/bin/env python3
"""An agent that streams one large answer (Python 3 standard library only),
for the doors' memory tests (proxy/internal/doortest.BigReply).

Listens on 127.0.0.1 on a free port and prints "READY <port>" once it
accepts. POST /answer/<total>/<size> streams Chat Completions SSE (HTTP/1.1
chunked, several events per chunk): the answer's pieces as content deltas,
then [DONE]. Piece i is i as 8 digits, then SPECIAL, then "x" up to <size>
bytes of UTF-8; there are <total> // <size> pieces. The Go side builds the
same text to check the answer byte for byte.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Characters a JSON writer must escape or keep whole: a quote, a
# backslash, a newline, a tab, HTML's three, and two-byte UTF-8.
SPECIAL = 'é "q" \\ \n\t<a>&'


def piece(i, size):
    head = ("%08d" % i) + SPECIAL
    return head + "x" * (size - len(head.encode()))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        parts = self.path.strip("/").split("/")
        if len(parts) != 3 or parts[0] != "answer":
            self.send_error(404)
            return
        total, size = int(parts[1]), int(parts[2])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        batch = []
        for i in range(total // size):
            chunk = {"id": "chatcmpl-big", "object": "chat.completion.chunk", "created": 1, "model": "big",
                     "choices": [{"index": 0, "delta": {"content": piece(i, size)}, "finish_reason": None}]}
            batch.append("data: %s\n\n" % json.dumps(chunk, ensure_ascii=False))
            if len(batch) == 16:
                self.send_chunk("".join(batch))
                batch = []
        batch.append("data: [DONE]\n\n")
        self.send_chunk("".join(batch))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def send_chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


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
