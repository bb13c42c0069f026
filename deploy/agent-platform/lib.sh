# Shared by deploy.sh and query.sh: sourced, not run.
# shellcheck shell=bash

die() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 1; }
say() { printf '%s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required${2:+: $2}"; }

# json_get PATH: one field of the JSON document on stdin, jq-style dotted
# path (.name, .response.name). Strings print raw, objects as JSON; null,
# false or missing print nothing. Uses jq, else python3.
json_get() {
  if command -v jq >/dev/null 2>&1; then
    jq -r "$1 // empty | if type == \"object\" or type == \"array\" then tojson else . end"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].strip(".").split("."):
    v = v.get(k) if isinstance(v, dict) else None
if v is None or v is False:
    pass
elif v is True:
    print("true")
elif isinstance(v, (dict, list)):
    print(json.dumps(v))
else:
    print(v)
' "$1"
  else
    die "jq or python3 is required to read the API's JSON"
  fi
}

# seconds NAME VALUE: VALUE is a whole number of seconds, or die. Checked
# before use: bash arithmetic would evaluate an expression (and the command
# substitutions in it).
seconds() {
  [[ $2 =~ ^[0-9]{1,9}$ ]] || die "$1 \"$2\": want a whole number of seconds"
}

# setup_api: PROJECT, REGION, API_VERSION, the API host and, unless
# DRY_RUN, an access token in a header file only this user can read (not on
# curl's command line, where ps would show it). REGION, PROJECT and
# API_VERSION become parts of the URL the token is sent to, so each must be
# what its name says: a region like `evil.example/x#` would send the token
# to evil.example.
setup_api() {
  API_VERSION=${API_VERSION:-v1}
  [[ -n ${REGION:-} ]] || die "set REGION (the engine's region, e.g. us-central1)"
  [[ $REGION =~ ^[a-z]+(-[a-z]+)+[0-9]+$ ]] || die "REGION \"$REGION\": not a region name (e.g. us-central1)"
  [[ $API_VERSION == v1 || $API_VERSION == v1beta1 ]] || die "API_VERSION \"$API_VERSION\": want v1 or v1beta1"
  if [[ -z ${PROJECT:-} ]]; then
    if command -v gcloud >/dev/null 2>&1; then
      PROJECT=$(gcloud config get-value project 2>/dev/null || true)
    fi
    [[ -n ${PROJECT:-} ]] || die "set PROJECT (or a gcloud default project)"
  fi
  # A project id (my-project, example.com:my-project) or number.
  [[ $PROJECT =~ ^([a-z]([-a-z0-9.:]*[a-z0-9])?|[0-9]+)$ ]] || die "PROJECT \"$PROJECT\": not a project id or number"
  # shellcheck disable=SC2034 # used by the scripts that source this file
  API="https://${REGION}-aiplatform.googleapis.com/${API_VERSION}"
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  HEADERS=$WORK/headers
  if [[ ${DRY_RUN:-0} != 1 ]]; then
    need curl
    need gcloud "for the access token (gcloud auth print-access-token)"
    local token
    token=$(gcloud auth print-access-token) || die "gcloud auth print-access-token failed: run gcloud auth login"
    (umask 077 && printf 'Authorization: Bearer %s\nContent-Type: application/json\n' "$token" >"$HEADERS")
  fi
}

# show_request METHOD URL [BODY_FILE]: what DRY_RUN prints instead of a call.
show_request() {
  printf '%s %s\n' "$1" "$2"
  # shellcheck disable=SC2016 # printed as is: the command to run, not its output
  printf 'Authorization: Bearer $(gcloud auth print-access-token)\nContent-Type: application/json\n'
  if [[ -n ${3:-} ]]; then
    printf '\n'
    cat "$3"
  fi
}

# api METHOD URL [BODY_FILE]: one REST call; the response body on stdout.
# A non-2xx answer prints the body on stderr and fails.
api() {
  local method=$1 url=$2 body=${3:-} out=$WORK/response status
  local args=(-sS -X "$method" -H "@$HEADERS" -o "$out" -w '%{http_code}')
  [[ -n $body ]] && args+=(--data-binary "@$body")
  status=$(curl "${args[@]}" "$url") || die "$method $url: curl failed"
  if [[ $status != 2?? ]]; then
    cat "$out" >&2 2>/dev/null || true
    printf '\n' >&2
    die "$method $url: HTTP $status"
  fi
  cat "$out"
}

# engine_name ID_OR_NAME: the full resource name of an engine.
engine_name() {
  if [[ $1 =~ ^[0-9]+$ ]]; then
    printf 'projects/%s/locations/%s/reasoningEngines/%s\n' "$PROJECT" "$REGION" "$1"
  elif [[ $1 =~ ^projects/([a-z]([-a-z0-9.:]*[a-z0-9])?|[0-9]+)/locations/[a-z]+(-[a-z]+)+[0-9]+/reasoningEngines/[0-9]+$ ]]; then
    printf '%s\n' "$1"
  else
    die "ENGINE_ID \"$1\": want a numeric id or projects/P/locations/R/reasoningEngines/ID"
  fi
}
