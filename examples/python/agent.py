#!/usr/bin/env python3
"""A tiny agent to run behind the sidecar, using only the Python standard library.

Replace the two handlers with your real agent (call your model, run your tools, ...).
The sidecar turns the Agent Platform's calls into plain HTTP calls to this process:

    GET  /health                       -> 200 {"status": "ok"}      (readiness probe, not logged)
    POST /query  {"message": "hi"}     -> 200 {"text": "Echo: hi"}  (method `query`)
    POST /stream {"message": "a b"}    -> text/event-stream          (method `stream_query`)
         data: {"text": "a "}
         data: {"text": "b "}

Run it:
    PORT=8000 python3 agent.py                    # TCP on 127.0.0.1:8000 (the default)
    AGENT_SOCKET=/tmp/agent.sock python3 agent.py  # or a Unix socket

Try it:
    curl -s localhost:8000/query -d '{"message": "hello"}'
    curl -N localhost:8000/stream -d '{"message": "one two three"}'
"""

import json
import os
import signal
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class AgentHandler(BaseHTTPRequestHandler):
    # --- the agent's logic ------------------------------------------------

    def do_GET(self):
        if self.path == "/health":
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, {"detail": "not found"})

    def do_POST(self):
        try:
            # "message" is the user's text: the platform's callers send it (the
            # method map's parameters), and so do the A2A and OpenAI-compatible
            # doors, with "messages" (the conversation as [{"role", "content"}],
            # ready for a model call) and "ids" (docs/doors.md, one input shape).
            message = str(self.read_json().get("message", ""))
        except ValueError:
            return self.send_json(400, {"detail": "body must be a JSON object"})

        if self.path == "/query":
            # A unary call: one JSON answer. The sidecar wraps it as {"output": ...}.
            self.send_json(200, {"text": "Echo: " + message})
        elif self.path == "/stream":
            # A streaming call: Server-Sent Events, one event per "token".
            # The sidecar forwards each event to the platform as soon as it arrives.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.close_connection = True  # no Content-Length: closing ends the stream
            try:
                for word in message.split():
                    event = json.dumps({"text": word + " "}, ensure_ascii=False)
                    self.wfile.write(("data: %s\n\n" % event).encode("utf-8"))
                    self.wfile.flush()  # send it now, don't wait for the whole answer
                    time.sleep(0.05)    # pretend the model is thinking
            except (BrokenPipeError, ConnectionResetError):
                pass  # the caller hung up: stop generating
        else:
            self.send_json(404, {"detail": "not found"})

    # --- small helpers ----------------------------------------------------

    def read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not isinstance(body, dict):
            raise ValueError("not an object")
        return body

    def send_json(self, status, value):
        body = json.dumps(value, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def address_string(self):
        # On a Unix socket the client address is an empty string.
        return self.client_address[0] if isinstance(self.client_address, tuple) else "unix"

    def log_request(self, code="-", size="-"):
        # The sidecar probes GET /health every second: a line for each would
        # bury the calls. A probe that fails is still logged.
        if self.path == "/health" and str(code) == "200":
            return
        super().log_request(code, size)

    def log_message(self, fmt, *args):
        # One line per request (health probes aside), on stderr.
        sys.stderr.write("agent: %s %s\n" % (self.address_string(), fmt % args))


class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True  # don't wait for open requests on exit


def main():
    socket_path = os.environ.get("AGENT_SOCKET")
    if socket_path:
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # left over from a previous run
        server = UnixHTTPServer(socket_path, AgentHandler)
        where = "unix:" + socket_path
    else:
        port = int(os.environ.get("PORT", "8000"))
        server = ThreadingHTTPServer(("127.0.0.1", port), AgentHandler)
        server.daemon_threads = True
        where = "http://127.0.0.1:%d" % port

    # SIGTERM (from the sidecar or the platform) and Ctrl-C both stop the server.
    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    sys.stderr.write("agent: listening on %s\n" % where)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        if socket_path and os.path.exists(socket_path):
            os.unlink(socket_path)
        sys.stderr.write("agent: stopped\n")


if __name__ == "__main__":
    main()
