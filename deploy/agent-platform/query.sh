#!/usr/bin/env bash
# Call a deployed engine the way the platform's SDK does: :query for unary
# methods, :streamQuery for streaming ones, printing lines as they arrive.
#
#   ENGINE_ID=1234567890 REGION=us-central1 deploy/agent-platform/query.sh
#       `query` on :query and `stream_query` on :streamQuery, each with
#       {"message": "hello"}: the example agents' two methods
#   … query.sh METHOD [INPUT_JSON]            one unary call (input default {})
#   … query.sh --stream METHOD [INPUT_JSON]   one streaming call
#
# Environment:
#   ENGINE_ID    the engine: numeric id or full resource name (required)
#   REGION       its region (required)
#   PROJECT      the project id (default: gcloud's default project)
#   ALT_SSE=1    ask :streamQuery for ?alt=sse (the platform adds SSE framing)
#   DRY_RUN=1    print the requests instead of sending them
#   API_VERSION  v1 (default) or v1beta1
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

stream=0
case ${1:-} in
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  --stream) stream=1; shift ;;
esac
(($# <= 2)) || die "usage: query.sh [--stream] [METHOD [INPUT_JSON]]"

[[ -n ${ENGINE_ID:-} ]] || die "set ENGINE_ID (the id deploy.sh printed)"
setup_api
name=$(engine_name "$ENGINE_ID")

# call unary|stream METHOD INPUT_JSON
call() {
  local route=$1 method=$2 input=$3 body=$WORK/body.json url
  [[ $method =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "method $method: not a method name"
  if command -v jq >/dev/null 2>&1; then
    jq -e 'type == "object"' >/dev/null 2>&1 <<<"$input" || die "input $input: not a JSON object"
  fi
  printf '{"class_method": "%s", "input": %s}\n' "$method" "$input" >"$body"
  if [[ $route == unary ]]; then
    url="$API/$name:query"
  else
    url="$API/$name:streamQuery"
    [[ ${ALT_SSE:-0} != 1 ]] || url+="?alt=sse"
  fi
  if [[ ${DRY_RUN:-0} == 1 ]]; then
    show_request POST "$url" "$body"
    printf '\n'
    return
  fi
  say "== $method (${url##*:})"
  if [[ $route == unary ]]; then
    api POST "$url" "$body"
    printf '\n'
  else
    # -N: print each line the moment it arrives. --fail-with-body: a 4xx/5xx
    # shows the platform's error and fails.
    curl -sS -N --fail-with-body -X POST -H "@$HEADERS" --data-binary "@$body" "$url" ||
      die "POST $url failed"
  fi
}

if (($# == 0)); then
  call unary query '{"message": "hello"}'
  call stream stream_query '{"message": "hello from the platform"}'
elif ((stream)); then
  call stream "$1" "${2:-"{}"}"
else
  call unary "$1" "${2:-"{}"}"
fi
