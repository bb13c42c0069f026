#!/usr/bin/env bash
# Installs @a2a-js/sdk, the A2A project's JavaScript SDK (exact version in
# package.json / package-lock.json), into
#   ${SIDECAR_CACHE:-<repo>/.cache}/a2a/
# for proxy/a2a's TestJSClient, which runs client.mjs (NODE_PATH: the
# node_modules directory this prints) against the A2A door (cmd/sidecar's
# TestOAuthClients: oauth.mjs, with a token).
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json (sha256 kept in a stamp file; see
# ../npm-cache.sh). Prints the path of node_modules on stdout (everything
# else goes to stderr). Works from any cwd. Needs npm and the npm registry
# (first run only). --check: installs nothing, fails naming `make deps`
# when the cache lacks the install (see ../npm-cache.sh).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../npm-cache.sh
. "$here/../npm-cache.sh"
dest="$(npm_cache_dir a2a)"
probe="$dest/node_modules/@a2a-js/sdk/package.json"

want="$(npm_cache_want "$here")"
# Only the client is used: no install scripts run.
npm_cache_install "$here" "$dest" "$want" "$probe" "" --ignore-scripts

printf '%s\n' "$dest/node_modules"
