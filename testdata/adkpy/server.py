#!/usr/bin/env python3
"""A stand-in for the Python ADK `adk api_server` (FastAPI + uvicorn).

Standard library only. It reproduces the wire behaviour of the Python server
where it differs from the TypeScript one (see README.md). Environment:

  PORT                  port on 127.0.0.1 (default 8000; 0 = any free port)
  ADK_APP               the one app name (default "weather")
  ADK_MEMORY            "1" = a memory service is configured (PATCH .../memory works)
  ADK_DUPLICATE_STATUS  status for a duplicate session id (default 400; newer ADK: 409)
  ADK_SSE_ERROR         shape of the /run_sse error event: "interpolated" (default,
                        may be invalid JSON), "json" (newest ADK: json.dumps), or
                        "event" (ADK ~1.1x: an Event authored by "system")
  ADK_SSE_DELAY_MS      pause between SSE events (default 0)

Prints READY on stdout once listening; logs go to stderr only.
"""

import json
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from sessions import STORE, new_event, stored_run

APP = os.environ.get("ADK_APP") or "weather"
MEMORY = os.environ.get("ADK_MEMORY") == "1"
DUP_STATUS = int(os.environ.get("ADK_DUPLICATE_STATUS") or "400")
SSE_ERROR = os.environ.get("ADK_SSE_ERROR") or "interpolated"
SSE_DELAY = float(os.environ.get("ADK_SSE_DELAY_MS") or "0") / 1000.0


def log(msg, *args):
    sys.stderr.write("adkpy: " + (msg % args if args else msg) + "\n")
    sys.stderr.flush()


def dumps(obj):
    # FastAPI's JSONResponse and pydantic's model_dump_json: compact, UTF-8.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------- HTTP

class HTTPError(Exception):
    def __init__(self, status, body, ctype="application/json"):
        super().__init__(status)
        self.status, self.body, self.ctype = status, body, ctype


def detail(status, msg):
    return HTTPError(status, dumps({"detail": msg}))


def missing(loc, inp):
    return HTTPError(422, dumps({"detail": [{"type": "missing", "loc": loc,
                                             "msg": "Field required", "input": inp}]}))


def not_object(inp):
    """FastAPI's 422 for a body model given something other than an object."""
    return HTTPError(422, dumps({"detail": [{
        "type": "model_attributes_type", "loc": ["body"],
        "msg": "Input should be a valid dictionary or object to extract fields from",
        "input": inp}]}))


INTERNAL = HTTPError(500, "Internal Server Error", "text/plain; charset=utf-8")
NOT_FOUND = detail(404, "Not Found")
METHOD_NOT_ALLOWED = detail(405, "Method Not Allowed")


def pick(body, *names):
    for n in names:
        if n in body:
            return body[n]
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self):
        return "uvicorn"

    def log_message(self, fmt, *args):
        log("%s %s", self.address_string(), fmt % args)

    # -- plumbing

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def json_body(self, raw):
        """Returns (present, value); raises 422 like FastAPI for bad JSON."""
        if not raw.strip():
            return False, None
        try:
            return True, json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            pos = getattr(e, "pos", 0)
            raise HTTPError(422, dumps({"detail": [{
                "type": "json_invalid", "loc": ["body", pos], "msg": "JSON decode error",
                "input": {}, "ctx": {"error": getattr(e, "msg", str(e))}}]}))

    def object_body(self, raw):
        """The body as a required JSON object, with FastAPI's 422s."""
        present, body = self.json_body(raw)
        if not present or body is None:
            raise missing(["body"], None)
        if not isinstance(body, dict):
            raise not_object(body)
        return body

    def send(self, status, body, ctype="application/json", extra=None):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        self.send_header("content-type", ctype)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_json(self, status, obj):
        self.send(status, dumps(obj))

    def dispatch(self, method):
        raw = self.read_body()
        path = self.path.split("?", 1)[0]
        segs = [unquote(s) for s in path.split("/")[1:]]
        try:
            self.route(method, segs, raw)
        except HTTPError as e:
            extra = {"allow": e.allow} if getattr(e, "allow", None) else None
            self.send(e.status, e.body, e.ctype, extra)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # starlette's ServerErrorMiddleware
            log("internal error: %r", e)
            self.send(INTERNAL.status, INTERNAL.body, INTERNAL.ctype)

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_PUT(self):
        self.dispatch("PUT")

    # -- routes

    def route(self, method, segs, raw):
        def only(*allowed):
            if method not in allowed:
                e = detail(405, "Method Not Allowed")
                e.allow = ", ".join(allowed)
                raise e

        if segs == ["health"]:
            only("GET")
            return self.send_json(200, {"status": "ok"})
        if segs == ["list-apps"]:
            only("GET")
            return self.send_json(200, [APP])
        if segs == ["run"]:
            only("POST")
            return self.run(raw, sse=False)
        if segs == ["run_sse"]:
            only("POST")
            return self.run(raw, sse=True)
        if len(segs) >= 5 and segs[0] == "apps" and segs[2] == "users" and all(segs[:5]):
            app, user = segs[1], segs[3]
            if len(segs) == 5 and segs[4] == "memory":
                only("PATCH")
                return self.patch_memory(app, user, raw)
            if segs[4] == "sessions" and len(segs) == 5:
                only("GET", "POST")
                if method == "GET":
                    return self.send_json(200, STORE.list(app, user))
                return self.create_session(app, user, None, raw)
            if segs[4] == "sessions" and len(segs) == 6 and segs[5]:
                sid = segs[5]
                only("GET", "POST", "DELETE", "PATCH")
                if method == "GET":
                    s = STORE.get(app, user, sid)
                    if s is None:
                        raise detail(404, "Session not found")
                    return self.send_json(200, s)
                if method == "DELETE":
                    STORE.delete(app, user, sid)
                    return self.send_json(200, None)
                if method == "POST":
                    return self.create_session(app, user, sid, raw)
                return self.patch_session(app, user, sid, raw)
        raise NOT_FOUND

    def create_session(self, app, user, path_sid, raw):
        present, body = self.json_body(raw)
        events = None
        if path_sid is not None:
            # create_session_with_id(..., state: Optional[dict] = None): the
            # whole body IS the state (a lone non-embedded body parameter).
            if present and body is not None and not isinstance(body, dict):
                raise HTTPError(422, dumps({"detail": [{
                    "type": "dict_type", "loc": ["body"],
                    "msg": "Input should be a valid dictionary", "input": body}]}))
            sid, state = path_sid, body if present else None
        else:
            if present and body is not None and not isinstance(body, dict):
                raise not_object(body)
            body = body or {}
            sid = pick(body, "sessionId", "session_id")
            state = body.get("state")
            events = body.get("events")
        session, sid = STORE.create(app, user, sid, state, events)
        if session is None:
            log("Session already exists: %s", sid)
            raise detail(DUP_STATUS, "Session already exists: %s" % sid)
        log("New session created: %s", sid)
        self.send_json(200, session)

    def patch_session(self, app, user, sid, raw):
        present, body = self.json_body(raw)
        if not present or not isinstance(body, dict):
            raise missing(["body"], None) if not present else not_object(body)
        delta = pick(body, "stateDelta", "state_delta")
        if delta is None:
            raise missing(["body", "stateDelta"], body)
        if not STORE.exists(app, user, sid):
            raise detail(404, "Session not found")
        ev = new_event("p-" + str(uuid.uuid4()), "user", None, state_delta=delta)
        del ev["content"]
        STORE.append(app, user, sid, ev)
        self.send_json(200, STORE.get(app, user, sid))

    def patch_memory(self, app, user, raw):
        body = self.object_body(raw)
        sid = pick(body, "sessionId", "session_id")
        if sid is None:
            raise missing(["body", "sessionId"], body)
        if not MEMORY:
            raise detail(400, "Memory service is not configured.")
        if not STORE.remember(app, user, sid):
            raise detail(404, "Session not found")
        self.send_json(200, None)

    def parse_run(self, raw):
        body = self.object_body(raw)
        req = {}
        errs = []
        for key, snake in (("appName", "app_name"), ("userId", "user_id"),
                           ("sessionId", "session_id")):
            v = pick(body, key, snake)
            if v is None:
                errs.append({"type": "missing", "loc": ["body", key],
                             "msg": "Field required", "input": body})
            req[key] = v
        if errs:
            raise HTTPError(422, dumps({"detail": errs}))
        req["newMessage"] = pick(body, "newMessage", "new_message")
        req["stateDelta"] = pick(body, "stateDelta", "state_delta")
        req["streaming"] = bool(body.get("streaming") or False)
        return req

    def run(self, raw, sse):
        req = self.parse_run(raw)
        app, user, sid = req["appName"], req["userId"], req["sessionId"]
        if not STORE.exists(app, user, sid):
            raise detail(404, "Session not found")
        if app != APP:
            raise INTERNAL  # the agent loader cannot find the app
        if not sse:
            events = list(stored_run(app, user, sid, req))  # "explode" -> 500
            log("Generated %d events in agent run", len(events))
            return self.send_json(200, events)

        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

        def chunk(text):
            data = text.encode("utf-8")
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            first = True
            try:
                for ev in stored_run(app, user, sid, req):
                    if not first and SSE_DELAY:
                        time.sleep(SSE_DELAY)
                    first = False
                    chunk("data: %s\n\n" % dumps(ev))
            except RuntimeError as e:
                log("Error in event_generator: %s", e)
                if SSE_ERROR == "json":
                    chunk("data: %s\n\n" % json.dumps({"error": str(e)}))
                elif SSE_ERROR == "event":
                    err = new_event("", "system", {"parts": [{"text": "Error: %s" % e}],
                                                   "role": "model"})
                    chunk("data: %s\n\n" % dumps(err))
                else:
                    chunk('data: {"error": "%s"}\n\n' % str(e))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main():
    port = int(os.environ.get("PORT") or "8000")
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True

    def on_signal(signum, _frame):
        log("signal %d, shutting down", signum)
        # shutdown() blocks until serve_forever() returns, so not from here.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log("listening on 127.0.0.1:%d app=%s memory=%s", server.server_address[1], APP, MEMORY)
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    server.serve_forever(poll_interval=0.05)
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
