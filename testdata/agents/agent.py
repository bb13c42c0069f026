#!/usr/bin/env python3
"""Test agent for the sidecar's Go tests (Python 3.11 standard library only).

Serves the same HTTP surface as agent.js so one Go test table runs against both.

Environment:
  AGENT_SOCKET  listen on this Unix socket path (a stale file is removed first)
  PORT          otherwise listen on 127.0.0.1:$PORT (default 8000)

stdout is a protocol read by the Go test, one flushed line each:
  READY         once, when the listener is bound and accepting
  CANCELLED <id> when a client goes away during /hang or /hang-headers
Request logs go to stderr.

HTTP/1.1 with keep-alive: fixed bodies carry Content-Length; streams are written
with hand-made chunked framing, one flushed chunk per event.
"""

import json
import os
import select
import signal
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HANG_LIMIT = 60.0  # seconds /hang and /hang-headers wait for the client to leave

_count_lock = threading.Lock()
_count = 0
_stdout_lock = threading.Lock()


def say(line):
    """Print one protocol line to stdout and flush it."""
    with _stdout_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def status_code(text):
    if len(text) != 3 or not text.isdigit() or text[0] not in "2345":
        raise ValueError("not a status code: %s" % text)
    return int(text)


def dumps(value):
    return json.dumps(value, ensure_ascii=False)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "testagent-py"

    # Unix sockets give '' as client_address; never index into it.
    def address_string(self):
        addr = self.client_address
        if isinstance(addr, tuple) and addr:
            return str(addr[0])
        return "unix"

    def log_message(self, fmt, *args):
        sys.stderr.write("agent.py %s %s\n" % (self.address_string(), fmt % args))

    def setup(self):
        super().setup()
        if self.connection.family in (socket.AF_INET, socket.AF_INET6):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = lambda self: self.dispatch()

    # ---- request helpers -------------------------------------------------

    def read_body(self):
        """Read the whole request body: Content-Length or chunked."""
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            parts = []
            while True:
                size_line = self.rfile.readline(65537)
                if not size_line:
                    break
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)  # CRLF after the chunk
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_fixed(self, status, ctype, body):
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        if status >= 200 and status not in (204, 304):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(body)

    def send_json(self, status, value):
        self.send_fixed(status, "application/json", dumps(value))

    def start_stream(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()  # flushes the header block to the socket

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def wait_for_disconnect(self, limit):
        """Block until the peer closes the connection (True) or limit passes (False)."""
        deadline = time.monotonic() + limit
        sock = self.connection
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([sock], [], [sock], left)
            if not readable:
                continue
            try:
                if sock.recv(1, socket.MSG_PEEK) == b"":
                    return True  # orderly EOF
            except OSError:
                return True  # reset
            time.sleep(0.005)  # unexpected bytes from the client: keep polling

    # ---- routing --------------------------------------------------------

    def dispatch(self):
        global _count
        raw_body = self.read_body()
        url = urlsplit(self.path)
        path = url.path
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        # Parameters may also come in a JSON object body (a method map
        # cannot put a query string in its path); the query string wins.
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = None
        if isinstance(body, dict):
            for k in ("n", "gap_ms", "ms", "id"):
                if k in body and k not in q:
                    q[k] = str(body[k])
        verb = self.command
        try:
            n = int(q.get("n", 3))
            gap = int(q.get("gap_ms", 0)) / 1000.0
            if path == "/echo" or path.startswith("/echo/"):
                return self.echo(raw_body)
            if path == "/health":
                if verb not in ("GET", "HEAD"):
                    return self.send_json(405, {"detail": "method not allowed"})
                return self.send_json(200, {"status": "ok"})
            if verb != "POST":
                return self.send_json(405, {"detail": "method not allowed"})
            if path == "/sse":
                self.start_stream("text/event-stream; charset=utf-8")
                for k in range(n):
                    if k and gap:
                        time.sleep(gap)
                    self.chunk("data: %s\n\n" % dumps({"i": k, "text": "tok%d" % k}))
                return self.end_stream()
            if path == "/ndjson":
                self.start_stream("application/x-ndjson")
                for k in range(n):
                    if k and gap:
                        time.sleep(gap)
                    self.chunk(dumps({"i": k}) + "\n")
                return self.end_stream()
            if path == "/text":
                self.start_stream("text/plain; charset=utf-8")
                for k in range(n):
                    if k and gap:
                        time.sleep(gap)
                    self.chunk("héllo %d\n" % k)
                return self.end_stream()
            if path == "/json-array":
                return self.send_fixed(200, "application/json", '[{"i":0},{"i":1},{"i":2}]')
            if path == "/bigint":
                return self.send_fixed(200, "application/json",
                                       '{"n": 12345678901234567890123, "f": 1.5e300}')
            if path.startswith("/status/"):
                code = status_code(path[len("/status/"):])
                return self.send_json(code, {"detail": "agent says %d" % code})
            if path.startswith("/status-text/"):
                code = status_code(path[len("/status-text/"):])
                return self.send_fixed(code, "text/html", "<html><body>agent broke</body></html>")
            if path == "/empty":
                return self.send_fixed(204, None, b"")
            if path == "/hang":
                self.start_stream("application/x-ndjson")
                self.chunk('{"started": true}\n')
                if self.wait_for_disconnect(HANG_LIMIT):
                    say("CANCELLED %s" % q.get("id", ""))
                    self.close_connection = True
                    return
                return self.end_stream()
            if path == "/hang-headers":
                if self.wait_for_disconnect(HANG_LIMIT):
                    say("CANCELLED %s" % q.get("id", ""))
                    self.close_connection = True
                    return
                return self.send_json(200, {"hung": "timeout"})
            if path == "/crash":
                self.start_stream("application/x-ndjson")
                for k in range(n):
                    self.chunk(dumps({"i": k}) + "\n")
                self.chunk('{"i": ')
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self.connection.close()
                return
            if path == "/sse-error":
                self.start_stream("text/event-stream")
                self.chunk('data: {"i":0}\n\n')
                self.chunk('event: error\ndata: {"message":"model overloaded"}\n\n')
                return self.end_stream()
            if path == "/sse-interpolated-error":
                self.start_stream("text/event-stream")
                self.chunk('data: {"i":0}\n\n')
                self.chunk('data: {"error": "Invalid value "x" here"}\n\n')
                return self.end_stream()
            if path == "/slow":
                # Tests wait for this line to know the call is here.
                sys.stderr.write("agent.py slow call started\n")
                sys.stderr.flush()
                time.sleep(int(q.get("ms", 0)) / 1000.0)
                return self.send_json(200, {"ok": True})
            if path == "/count":
                with _count_lock:
                    _count += 1
                    k = _count
                return self.send_json(200, {"count": k})
            return self.send_json(404, {"detail": "not found: %s" % path})
        except ValueError as e:
            return self.send_json(400, {"detail": "bad request: %s" % e})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def echo(self, raw_body):
        # The body is spliced in verbatim when it is valid JSON, so big integers and
        # float spellings survive exactly; non-JSON bodies come back as a JSON string.
        text = raw_body.decode("utf-8", "replace").strip()
        if not text:
            body = "null"
        else:
            try:
                json.loads(text)
                body = text
            except ValueError:
                body = dumps(text)
        headers = {}
        for name, value in self.headers.items():
            name = name.lower()
            headers[name] = headers[name] + ", " + value if name in headers else value
        out = '{"method": %s, "path": %s, "body": %s, "headers": %s}' % (
            dumps(self.command), dumps(self.path), body, dumps(headers))
        self.send_fixed(200, "application/json", out)


class TCPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    sock_path = os.environ.get("AGENT_SOCKET")
    if sock_path:
        try:
            os.unlink(sock_path)
        except FileNotFoundError:
            pass
        server = UnixServer(sock_path, Handler)
    else:
        server = TCPServer(("127.0.0.1", int(os.environ.get("PORT") or 8000)), Handler)

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    say("READY")
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
        if sock_path:
            try:
                os.unlink(sock_path)
            except OSError:
                pass


if __name__ == "__main__":
    main()
