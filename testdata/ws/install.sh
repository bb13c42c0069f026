#!/usr/bin/env bash
# Installs the `ws` npm package (the exact version in package.json /
# package-lock.json; its engines allow Node 20) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/ws/
# for the conversations' tests (bidi methods, docs/live.md): client.mjs is
# a caller through the sidecar's WebSocket routes, platform.mjs one of the
# live door in the platform's bidi framing, agent.mjs an agent's
# WebSocket server. They run with NODE_PATH the node_modules directory
# this prints.
#
# Skips `npm ci` when the cache already holds node_modules installed from
# the same package.json + package-lock.json (sha256 kept in a stamp file;
# see ../npm-cache.sh). Prints the path of node_modules on stdout
# (everything else goes to stderr). Works from any cwd. Needs npm and the
# npm registry (first run only). --check: installs nothing, fails naming
# `make deps` when the cache lacks the install (see ../npm-cache.sh).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../npm-cache.sh
. "$here/../npm-cache.sh"
dest="$(npm_cache_dir ws)"
probe="$dest/node_modules/ws/package.json"

want="$(npm_cache_want "$here")"
# Only the package's JavaScript is used: no install scripts run (its
# optional native peers, bufferutil and utf-8-validate, are not installed).
npm_cache_install "$here" "$dest" "$want" "$probe" "" --ignore-scripts

printf '%s\n' "$dest/node_modules"
