#!/usr/bin/env python3
"""The emulator tests' agent (Python 3 standard library only).

Listens on 127.0.0.1 (an OS-chosen port) and prints "READY <port>" on stdout.

  POST /echo     200 {"input": <the body>, "content_type": <its Content-Type>}
  POST /fail     500 {"detail": "boom: <input.why>"}
  POST /stream   ndjson, chunked: input.lines lines {"n": i, "text": "…"}; with
                 input.hold, each line after the first waits for a POST /release;
                 with input.fail, the connection is dropped after the lines (no
                 final chunk), which the sidecar turns into a final error line.
  POST /release  lets one held line go.

  On /echo, /fail and /stream, input.think_ms waits that long before the reply's head.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

release = threading.Semaphore(0)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("agent.py %s\n" % (fmt % args))

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_POST(self):
        raw = self.body()
        if self.path == "/release":
            release.release()
            return self.reply(200, {})
        data = json.loads(raw or b"{}")
        if data.get("think_ms"):
            time.sleep(data["think_ms"] / 1000)
        if self.path == "/echo":
            return self.reply(200, {"input": data, "content_type": self.headers.get("Content-Type")})
        if self.path == "/fail":
            return self.reply(500, {"detail": "boom: %s" % data.get("why")})
        if self.path != "/stream":
            return self.reply(404, {"detail": "no route " + self.path})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i in range(int(data.get("lines", 1))):
            if i > 0 and data.get("hold") and not release.acquire(timeout=30):
                self.close_connection = True
                return
            line = json.dumps({"n": i, "text": "line %d <&>" % i}).encode() + b"\n"
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            except OSError:
                self.close_connection = True
                return
        if data.get("fail"):
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sys.stdout.write("READY %d\n" % server.server_address[1])
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
