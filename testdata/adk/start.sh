#!/usr/bin/env bash
# Starts the real TypeScript ADK api server (@google/adk-devtools 2.0.0) on
# 127.0.0.1:PORT, serving testdata/adk/agents (app `weather`) with in-memory
# session, artifact and memory services. Offline: no model, telemetry or
# update traffic.
#
#   testdata/adk/start.sh PORT [extra api_server flags...]
#
# The script ends by exec'ing node, so the PID of this script is the PID of
# the server. Stop it with SIGINT (then SIGTERM after a few seconds).
# `GET /health` answers 200 after ~1.1 s, before any agent is loaded; agents
# load lazily (agent.ts is bundled with esbuild on the first request that
# needs one, ~1.2 s more). Readiness probe: `GET /list-apps` returns a JSON
# array containing "weather" (~2.3 s after start). Logs go to stdout/stderr.
# Installs nothing: `make deps` (or install.sh) installs the npm packages
# first; without them this exits 1 naming `make deps`.
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 PORT [extra api_server flags...]" >&2
  exit 2
fi
port="$1"
shift

node_modules="$("$here/install.sh" --check)"
cli="$node_modules/@google/adk-devtools/dist/esm/cli_entrypoint.js"

# The CLI calls dotenv.config(), which reads ./.env: run from a directory that
# has none so the caller's cwd cannot leak settings into the server.
cd "$here"

# Telemetry is only exported when --otel_to_cloud is set or an
# OTEL_EXPORTER_OTLP_*ENDPOINT variable is present; make sure none is.
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT OTEL_EXPORTER_OTLP_LOGS_ENDPOINT \
  DATABASE_URL ADK_A2A_AUTH_TOKEN
# Express defaults (NODE_ENV unset = development: HTML error pages with stack
# traces); TRANSCRIPT.md was recorded that way.
unset NODE_ENV

# The server bundles agent.ts into a mkdtemp dir (~5 MB) under os.tmpdir().
# It removes it after the first run, but not when stopped before one (nor on
# SIGTERM/SIGKILL). Give each server its own TMPDIR, named after its PID (exec
# keeps $$), and sweep the dirs of servers that are gone.
tmp_root="$(dirname -- "$node_modules")/tmp"
mkdir -p "$tmp_root"
for d in "$tmp_root"/*; do
  [ -d "$d" ] || continue
  p="${d##*/}"
  if ! [[ "$p" =~ ^[0-9]+$ ]] || ! kill -0 "$p" 2>/dev/null; then rm -rf -- "$d"; fi
done
export TMPDIR="$tmp_root/$$"
rm -rf -- "$TMPDIR"
mkdir -p "$TMPDIR"

# AGENTS_DIR goes first: options such as --a2a take an optional value and
# would swallow a following positional argument.
exec node "$cli" api_server "$here/agents" \
  --host 127.0.0.1 \
  --port "$port" \
  --session_service_uri memory:// \
  --artifact_service_uri memory:// \
  "$@"
