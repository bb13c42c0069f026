#!/usr/bin/env python3
"""The agent behind each of cmd/sidecar's TestReplicas' sidecars, one
process per replica (Python 3 standard library only): doors.py's routes,
with its holds shared by every replica's agent and watched for a cancel.

Listens on 127.0.0.1:$PORT and prints "READY" on stdout, flushed, once it
accepts. What differs from doors.py:

  A held stream (a <message> "hold-<key>" on /story or /chat) waits for the
  file $HOLD_DIR/<key>, not for an event of this process: POST
  /release/<key> to any replica's agent creates it, so a client that
  cannot know which replica runs its call releases it all the same.
  While it holds, the agent watches its connection: when the sidecar ends
  the request (a task canceled, the sidecar killed), it notes the key as
  canceled and sends nothing more.

  GET /holding/<key>   {"holding": true} while this agent holds the stream
                       of key (noted before its first word is sent)
  GET /canceled/<key>  waits, up to HOLD_LIMIT, until the held stream of key
                       is canceled here: {"canceled": true}, else false
"""

import json
import os
import select
import socket
import threading
import time
from http.server import ThreadingHTTPServer

import doors

HOLD_DIR = os.environ["HOLD_DIR"]

_lock = threading.Lock()
_holding = set()  # keys of the streams this agent holds
_canceled = {}  # key -> threading.Event, set when its hold was canceled


def canceled(key):
    """The event set when the held stream of key is canceled."""
    with _lock:
        return _canceled.setdefault(key, threading.Event())


def marker(key):
    """The file that releases the stream of key; None for a key that is
    not a plain name."""
    if not key or not all(c.isalnum() or c in "-_." for c in key) or key.startswith("."):
        return None
    return os.path.join(HOLD_DIR, key)


class Handler(doors.Handler):
    def handle(self):
        # A sidecar killed or stopped resets its idle connections: not an
        # error of the agent's.
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def sse(self, first, rest, hold):
        if not hold:
            return super().sse(first, rest, hold)
        with _lock:
            _holding.add(hold)
        try:
            self.start("text/event-stream")
            for e in first:
                self.write("data: %s\n\n" % json.dumps(e))
            released = self.wait_release(hold)
            if released is None:
                canceled(hold).set()
                self.close_connection = True
                return
            rest = [doors.chunk({"content": "released " if released else "unreleased "})] + rest
            for e in rest:
                self.write("data: %s\n\n" % (e if isinstance(e, str) else json.dumps(e)))
            self.end()
        finally:
            with _lock:
                _holding.discard(hold)

    def wait_release(self, key):
        """True once the marker of key exists, False after HOLD_LIMIT, None
        when the sidecar closed the connection first (the call ended)."""
        path = marker(key)
        deadline = time.monotonic() + doors.HOLD_LIMIT
        while time.monotonic() < deadline:
            if path and os.path.exists(path):
                return True
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if not readable:
                continue
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return None
            except OSError:
                return None
            time.sleep(0.02)  # bytes of a next request: not a close
        return False

    def do_POST(self):
        if self.path.startswith("/release/"):
            path = marker(self.path[len("/release/"):])
            if path is None:
                return self.reply(400, {"detail": "not a key: " + self.path})
            open(path, "a").close()
            return self.reply(200, {})
        return super().do_POST()

    def do_GET(self):
        if self.path.startswith("/holding/"):
            with _lock:
                holding = self.path[len("/holding/"):] in _holding
            return self.reply(200, {"holding": holding})
        if self.path.startswith("/canceled/"):
            return self.reply(200, {"canceled": canceled(self.path[len("/canceled/"):]).wait(doors.HOLD_LIMIT)})
        self.reply(404, {"detail": "no route " + self.path})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT") or 0)), Handler)
    server.daemon_threads = True
    print("READY", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
