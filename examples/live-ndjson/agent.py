"""A live agent with no WebSocket server: the sidecar's full-duplex ndjson side.

The sidecar opens one POST /live per conversation. Its chunked body stays
open and carries a line per caller frame (one JSON value each); every line
this agent writes back is one frame to the caller. Ending the response ends
the conversation (the caller gets 1000); the body ending (EOF) means the
caller left.

Standard library only: python3 agent.py [PORT] (default 8000).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chunks(rfile):
    """Yields the decoded chunks of a chunked request body until its end.

    BaseHTTPRequestHandler leaves Transfer-Encoding: chunked to the handler.
    """
    while True:
        size_line = rfile.readline()
        if not size_line:
            return  # the connection ended
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        data = rfile.read(size)
        rfile.readline()  # the chunk's CRLF
        yield data


def lines(rfile):
    """Yields the body's lines, whatever the chunks' boundaries."""
    pending = b""
    for chunk in chunks(rfile):
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line
    if pending.strip():
        yield pending


class Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # a chunked response, written as it goes

    def do_POST(self):
        if self.path == "/query":
            self.query()
            return
        if self.path != "/live":
            self.send_error(404)
            return
        # The headers first: the sidecar waits for them before it lets the
        # caller in, and the body stays open for the whole conversation.
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        turn = 0
        for line in lines(self.rfile):
            turn += 1
            frame = json.loads(line)
            if frame == {"bye": True}:
                self.send_line({"turn": turn, "bye": True})
                break  # ending the response ends the conversation: 1000
            self.send_line({"turn": turn, "echo": frame})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def query(self):
        """A unary call (the door's method): one JSON answer."""
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        data = json.dumps({"output": "talk to me on /ws", "got": len(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_line(self, value):
        """Writes value as one line in one chunk, flushed at once."""
        data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def log_message(self, format, *args):
        sys.stderr.write("agent: " + format % args + "\n")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    server = ThreadingHTTPServer(("127.0.0.1", port), Agent)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
