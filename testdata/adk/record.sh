#!/usr/bin/env bash
# Re-records the raw exchanges quoted in TRANSCRIPT.md: starts the fixture
# server (start.sh) on 127.0.0.1:PORT, sends every request with curl, prints
# each request and the verbatim response (status line, headers, body) as
# Markdown on stdout, then stops the server with SIGINT (SIGTERM after 5 s).
#
#   testdata/adk/record.sh [PORT] > /tmp/raw.md
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
port="${1:-18499}"
B="http://127.0.0.1:$port"
S="$B/apps/weather/users/u1/sessions"
J='Content-Type: application/json'
log="$(mktemp)"

"$here/install.sh" >/dev/null
t0=$(date +%s%N)
"$here/start.sh" "$port" >"$log" 2>&1 &
pid=$!
stop() {
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT

for _ in $(seq 1 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$B/health" || true)" = 200 ] && break
  sleep 0.02
done
t1=$(date +%s%N)
curl -s -o /dev/null "$B/list-apps"
t2=$(date +%s%N)
echo "Startup of this recording: \`GET /health\` 200 after $(((t1 - t0) / 1000000)) ms; first \`GET /list-apps\` (bundles agent.ts) done after $(((t2 - t0) / 1000000)) ms."
echo

# req TITLE CURL-ARGS... : prints the request and the raw response.
req() {
  local title="$1"; shift
  echo "#### $title"
  echo
  echo '```console'
  local shown=() a
  for a in "$@"; do
    if [[ "$a" == *' '* || "$a" == *'{'* || "$a" == *'?'* || "$a" == *'&'* ]]; then shown+=("'$a'"); else shown+=("$a"); fi
  done
  echo "\$ curl -sS -i ${shown[*]//$B/http://127.0.0.1:\$PORT}"
  curl -sS -i -N "$@" | tr -d '\r'
  echo
  echo '```'
  echo
}

req "GET /list-apps" "$B/list-apps"
req "POST …/sessions, no body" -X POST "$S"
req "POST …/sessions, body {}" -X POST "$S" -H "$J" -d '{}'
req "POST …/sessions, with state (temp: keys are dropped)" -X POST "$S" -H "$J" -d '{"state":{"k":"v","n":1,"app:x":1,"user:y":2,"temp:z":3}}'
req "POST …/sessions, body sessionId (ignored)" -X POST "$S" -H "$J" -d '{"sessionId":"body-camel"}'
req "POST …/sessions, body session_id (ignored)" -X POST "$S" -H "$J" -d '{"session_id":"body-snake"}'
req "POST …/sessions/s1 (client-chosen id) with state" -X POST "$S/s1" -H "$J" -d '{"state":{"a":1}}'
req "POST …/sessions/s1 again (duplicate id)" -X POST "$S/s1" -H "$J" -d '{}'
req "POST …/sessions/s2, no body" -X POST "$S/s2"
req "POST …/sessions for an app that does not exist (not validated)" -X POST "$B/apps/nope/users/u1/sessions/x1"
req "POST …/sessions, invalid JSON body" -X POST "$S" -H "$J" -d '{"state":'
req "GET …/sessions/s1" "$S/s1"
req "GET …/sessions/missing" "$S/missing"
req "GET …/sessions (list)" "$S"
req "GET …/sessions (list, user without sessions)" "$B/apps/weather/users/nobody/sessions"
req "DELETE …/sessions/s2" -X DELETE "$S/s2"
req "DELETE …/sessions/s2 again" -X DELETE "$S/s2"
req "PATCH …/memory" -X PATCH "$B/apps/weather/users/u1/memory" -H "$J" -d '{"session_id":"s1"}'
req "POST …/memory:search (no memory routes at all)" -X POST "$B/apps/weather/users/u1/memory:search" -H "$J" -d '{"query":"Paris"}'

curl -s -o /dev/null -X POST "$S/r1"
req "POST /run" -X POST "$B/run" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"r1","newMessage":{"role":"user","parts":[{"text":"Paris"}]}}'
req "GET …/sessions/r1 after /run" "$S/r1"
curl -s -o /dev/null -X POST "$S/r2"
req "POST /run with streaming:true (ignored by /run)" -X POST "$B/run" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"r2","newMessage":{"role":"user","parts":[{"text":"Berlin"}]},"streaming":true}'
req "POST /run, missing session" -X POST "$B/run" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"nope","newMessage":{"role":"user","parts":[{"text":"Paris"}]}}'
curl -s -o /dev/null -X POST "$S/e2"
req "POST /run, model raises" -X POST "$B/run" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"e2","newMessage":{"role":"user","parts":[{"text":"__error__"}]}}'
req "POST /run, unknown app with an existing session" -X POST "$B/run" -H "$J" -d '{"appName":"nope","userId":"u1","sessionId":"x1","newMessage":{"role":"user","parts":[{"text":"Paris"}]}}'
curl -s -o /dev/null -X POST "$S/sd" -H "$J" -d '{"state":{"a":1}}'
req "POST /run with stateDelta" -X POST "$B/run" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"sd","newMessage":{"role":"user","parts":[{"text":"Rome"}]},"stateDelta":{"b":2}}'
req "GET …/sessions/sd after /run with stateDelta (delta lands on the user event)" "$S/sd"
curl -s -o /dev/null -X POST "$S/nm"
req "POST /run without newMessage" -X POST "$B/run" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"nm"}'

curl -s -o /dev/null -X POST "$S/sse1"
req "POST /run_sse" -X POST "$B/run_sse" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"sse1","newMessage":{"role":"user","parts":[{"text":"Paris"}]}}'
curl -s -o /dev/null -X POST "$S/sse2"
req "POST /run_sse with streaming:true" -X POST "$B/run_sse" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"sse2","newMessage":{"role":"user","parts":[{"text":"Paris"}]},"streaming":true}'
req "GET …/sessions/sse2 after the streaming run (partials not stored)" "$S/sse2"
req "POST /run_sse, missing session" -X POST "$B/run_sse" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"nope","newMessage":{"role":"user","parts":[{"text":"Paris"}]}}'
curl -s -o /dev/null -X POST "$S/e1"
req "POST /run_sse, model raises (ADK turns it into an error event)" -X POST "$B/run_sse" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"e1","newMessage":{"role":"user","parts":[{"text":"__error__"}]}}'
req "POST /run_sse, unknown app with an existing session (error after headers)" -X POST "$B/run_sse" -H "$J" -d '{"appName":"nope","userId":"u1","sessionId":"x1","newMessage":{"role":"user","parts":[{"text":"Paris"}]}}'
curl -s -o /dev/null -X POST "$S/nm2"
req "POST /run_sse without newMessage" -X POST "$B/run_sse" -H "$J" -d '{"appName":"weather","userId":"u1","sessionId":"nm2"}'

req "GET /health" "$B/health"
req "GET /" "$B/"
req "GET /version" "$B/version"
req "GET /healthz (unknown route)" "$B/healthz"
req "GET /run (wrong method)" "$B/run"
req "POST /api/reasoning_engine (the TS api server's own Agent Engine route; class_method ignored)" -X POST "$B/api/reasoning_engine" -H "$J" -d '{"class_method":"stream_query","input":{"appName":"weather","userId":"u9","sessionId":"re1","newMessage":{"role":"user","parts":[{"text":"Oslo"}]}}}'
req "POST /api/stream_reasoning_engine (not served)" -X POST "$B/api/stream_reasoning_engine" -H "$J" -d '{"class_method":"stream_query","input":{}}'
