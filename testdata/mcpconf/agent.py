#!/usr/bin/env python3
"""The agent behind the sidecar's MCP door while the official MCP
conformance suite runs against it (proxy/mcp's TestConformance; Python 3
standard library only). It serves the tools the suite's tools scenarios
call, as the method map in conformance_test.go names them.

Listens on 127.0.0.1:$PORT (0: any free port) and prints "READY <port>" on
stdout, flushed, once it accepts. Routes (every body is the method's JSON
input):
  POST /simple_text  "This is a simple text response for testing." (a JSON
                     string: the tool's text)
  POST /error        500 {"detail": "This tool intentionally returns an error
                     for testing"} (the door's isError result)
  POST /progress     an OpenAI chat completions stream of three chunks about
                     50 ms apart, then [DONE] (a progress notification each)
  POST /echo         the input, as JSON (json_schema_2020_12_tool)
  POST /image        a 1x1 PNG as one part record, the reply (a unary
                     method's output: the result's one image content)
  POST /audio        NDJSON: a text, then a short WAV as a part record
  POST /resource     a JSON document as an inline_data part (the result's
                     embedded resource)
  POST /mixed        NDJSON: a text, the PNG and the JSON document
  POST /ask/<tool>   the elicitation and input-required scenarios' tools: an
                     input without reply asks the tool's question (an
                     input_required record, QUESTIONS); with a reply, its
                     text says what the reply was (or, multi-round, asks
                     the next question)
"""

import base64
import json
import os
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def form(message, qid, properties, required=()):
    return {"input_required": {"message": message, "id": qid, "schema": {
        "type": "object", "properties": properties, "required": list(required)}}}


QUESTIONS = {
    "test_elicitation": lambda args: form(args.get("message", "Please provide your information"), "user_info", {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}}, ["username", "email"]),
    "test_elicitation_sep1034_defaults": lambda args: form("Please review and update the form fields with defaults", "defaults", {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True}}),
    "test_elicitation_sep1330_enums": lambda args: form("Please select options from the enum fields", "enums", {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}}}),
    "test_input_required_result_elicitation": lambda args: form("What is your name?", "user_name", {"name": {"type": "string"}}, ["name"]),
    "test_input_required_result_request_state": lambda args: form("Please confirm", "confirm", {"ok": {"type": "boolean"}}, ["ok"]),
    "test_input_required_result_tampered_state": lambda args: form("Please confirm", "confirm", {"ok": {"type": "boolean"}}, ["ok"]),
    "test_input_required_result_capabilities": lambda args: form("What is your name?", "user_name", {"name": {"type": "string"}}, ["name"]),
    "test_input_required_result_multi_round": lambda args: form("Step 1: What is your name?", "step1", {"name": {"type": "string"}}, ["name"]),
}


def answered(tool, reply):
    """The answer of tool called again with reply: a text, or the next
    question."""
    content = reply.get("content") or {}
    if tool == "test_input_required_result_multi_round" and reply.get("id") == "step1":
        return form("Step 2: What is your favorite color?", "step2", {"color": {"type": "string"}}, ["color"])
    if tool == "test_input_required_result_elicitation":
        return "Hello, %s!" % content.get("name", "")
    if tool == "test_input_required_result_request_state":
        return "state-ok: confirmed %s" % json.dumps(content)
    if tool == "test_elicitation":
        return "User response: action=%s, content=%s" % (reply.get("action"), json.dumps(content))
    return "Elicitation completed: action=%s, content=%s" % (reply.get("action"), json.dumps(content))


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
WAV = base64.b64encode(b"RIFF" + struct.pack("<I", 36 + 8) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 16000, 2, 16)
                       + b"data" + struct.pack("<I", 8) + b"\x00" * 8).decode()
DOC = base64.b64encode(json.dumps({"test": "data", "value": 123}).encode()).decode()


def inline(mime_type, data, name=None):
    part = {"mime_type": mime_type, "data": data}
    if name:
        part["display_name"] = name
    return {"inline_data": part}


def chunk(text):
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mcpconf agent.py " + (fmt % args) + "\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/simple_text":
            self.json(200, "This is a simple text response for testing.")
        elif self.path == "/error":
            self.json(500, {"detail": "This tool intentionally returns an error for testing"})
        elif self.path == "/progress":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for i, text in enumerate(["0% ", "50% ", "100%"]):
                if i:
                    time.sleep(0.05)
                self.wfile.write(("data: " + json.dumps(chunk(text)) + "\n\n").encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
        elif self.path == "/echo":
            self.json(200, body)
        elif self.path == "/image":
            self.json(200, inline("image/png", PNG))
        elif self.path == "/audio":
            self.ndjson(["Here is the sound:", inline("audio/wav", WAV)])
        elif self.path == "/resource":
            self.json(200, inline("application/json", DOC, "resource.json"))
        elif self.path == "/mixed":
            self.ndjson(["Multiple content types test:", inline("image/png", PNG), inline("application/json", DOC, "resource.json")])
        elif self.path.startswith("/ask/") and self.path[5:] in QUESTIONS:
            tool = self.path[5:]
            reply = body.pop("reply", None)
            self.json(200, answered(tool, reply) if reply else QUESTIONS[tool](body))
        else:
            self.json(404, {"detail": "no route " + self.path})

    def ndjson(self, records):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Connection", "close")
        self.end_headers()
        for r in records:
            self.wfile.write(json.dumps(r).encode() + b"\n")
            self.wfile.flush()
        self.close_connection = True

    def json(self, status, value):
        b = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    server.daemon_threads = True
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
