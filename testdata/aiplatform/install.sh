#!/usr/bin/env bash
# Installs @google-cloud/aiplatform (exact version in package.json /
# package-lock.json) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/aiplatform/
# for deploy's TestRequestMatchesProtos, which reads the ReasoningEngine
# messages from the package's build/protos/protos.json, and for
# proxy/devapi's TestNodeClient, which runs client.js (NODE_PATH: the
# node_modules directory above that path) against sidecar dev.
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json (sha256 kept in a stamp file; see
# ../npm-cache.sh). Prints the path of protos.json on stdout (everything else
# goes to stderr). Works from any cwd. Needs npm and the npm registry (first
# run only).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../npm-cache.sh
. "$here/../npm-cache.sh"
dest="$(npm_cache_dir aiplatform)"
protos="$dest/node_modules/@google-cloud/aiplatform/build/protos/protos.json"

want="$(npm_cache_want "$here")"
# Only the package's data is read: no install scripts run.
npm_cache_install "$here" "$dest" "$want" "$protos" "" --ignore-scripts

printf '%s\n' "$protos"
