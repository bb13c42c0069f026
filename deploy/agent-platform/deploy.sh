#!/usr/bin/env bash
# Create, or update, an Agent Platform reasoningEngine that runs an image
# whose entrypoint is the sidecar, and wait until it is ready.
#
#   REGION=us-central1 PROJECT=my-project deploy/agent-platform/deploy.sh \
#     --config examples/python/sidecar.yaml \
#     --image us-central1-docker.pkg.dev/my-project/agents/my-agent:v1 \
#     --display-name my-agent --min-instances 1 --env LOG_LEVEL=info
#
# Every argument goes to `sidecar deploy-request`, which writes the request
# body: spec.classMethods from the method map (each with its api_mode),
# containerSpec.imageUri, agentFramework (google-adk for the ADK preset),
# deploymentSpec env, secretEnv, instances, resource limits, concurrency;
# with --a2a, the mounted A2A door's spec.agentCard and a2a_extension
# methods (--a2a-url URL: the URL its card advertises; docs/a2a.md).
# `sidecar deploy-request --help` lists the flags.
#
# Environment:
#   REGION         the engine's region (required)
#   PROJECT        the project id (default: gcloud's default project)
#   ENGINE_ID      update this engine (numeric id or full resource name)
#                  with PATCH and an updateMask of every field the request
#                  sets, instead of creating a new one
#   DRY_RUN=1      print the request instead of sending it (needs no gcloud)
#   SIDECAR        the sidecar binary (default: sidecar on PATH, else this
#                  repository's bin/sidecar: make build)
#   API_VERSION    v1 (default) or v1beta1 (passed on as --api-version)
#   POLL_INTERVAL  seconds between operation polls (default 10)
#   POLL_TIMEOUT   give up waiting after this many seconds (default 1800)
#
# On success the engine's resource name is the only line on stdout:
#   projects/my-project/locations/us-central1/reasoningEngines/1234567890
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

case ${1:-} in
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac

if [[ -z ${SIDECAR:-} ]]; then
  if command -v sidecar >/dev/null 2>&1; then
    SIDECAR=sidecar
  elif [[ -x $here/../../bin/sidecar ]]; then
    SIDECAR=$here/../../bin/sidecar
  else
    die "no sidecar binary: put it on PATH, set SIDECAR, or run make build"
  fi
fi

setup_api
interval=${POLL_INTERVAL:-10}
timeout=${POLL_TIMEOUT:-1800}
seconds POLL_INTERVAL "$interval"
seconds POLL_TIMEOUT "$timeout"

body=$WORK/request.json
"$SIDECAR" deploy-request --api-version "$API_VERSION" "$@" >"$body" || die "sidecar deploy-request failed"

if [[ -n ${ENGINE_ID:-} ]]; then
  name=$(engine_name "$ENGINE_ID")
  mask=$("$SIDECAR" deploy-request --api-version "$API_VERSION" "$@" --update-mask 2>/dev/null) || die "sidecar deploy-request --update-mask failed"
  method=PATCH
  url="$API/$name?updateMask=$mask"
else
  method=POST
  url="$API/projects/$PROJECT/locations/$REGION/reasoningEngines"
fi

if [[ ${DRY_RUN:-0} == 1 ]]; then
  show_request "$method" "$url" "$body"
  exit 0
fi

say "$method $url"
op=$(api "$method" "$url" "$body")
op_name=$(json_get .name <<<"$op")
[[ -n $op_name ]] || die "no operation in the answer: $op"
# Polled with the token: only an operation name, never another host.
[[ $op_name =~ ^projects/[^?#[:space:]]+/operations/[^/?#[:space:]]+$ ]] || die "operation name \"$op_name\": not projects/…/operations/ID"
say "operation $op_name"

deadline=$((SECONDS + timeout))
while [[ $(json_get .done <<<"$op") != true ]]; do
  ((SECONDS < deadline)) || die "operation $op_name still running after ${timeout}s"
  sleep "$interval"
  op=$(api GET "$API/$op_name")
  say "  … $(date +%H:%M:%S) done=$(json_get .done <<<"$op" | sed 's/^$/false/')"
done

err=$(json_get .error <<<"$op")
[[ -z $err ]] || die "operation $op_name failed: $err"

engine=$(json_get .response.name <<<"$op")
[[ -n $engine ]] || engine=${op_name%/operations/*}
say "ready: $engine"
say "try it: ENGINE_ID=${engine##*/} REGION=$REGION PROJECT=$PROJECT $here/query.sh"
printf '%s\n' "$engine"
