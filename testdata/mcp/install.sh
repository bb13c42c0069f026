#!/usr/bin/env bash
# Installs @modelcontextprotocol/sdk, the MCP TypeScript SDK (exact version
# in package.json / package-lock.json), into
#   ${SIDECAR_CACHE:-<repo>/.cache}/mcp/
# for upstream's TestAcceptMCPServer, which runs server.mjs (NODE_PATH: the
# node_modules directory this prints) as an agent behind the sidecar, and
# proxy/mcp's TestSDK1Client, which runs client.mjs against the MCP door
# (cmd/sidecar's TestOAuthClients: oauth.mjs, with OAuth).
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
dest="$(npm_cache_dir mcp)"
probe="$dest/node_modules/@modelcontextprotocol/sdk/package.json"

want="$(npm_cache_want "$here")"
# Only the server's JavaScript is used: no install scripts run.
npm_cache_install "$here" "$dest" "$want" "$probe" "" --ignore-scripts

printf '%s\n' "$dest/node_modules"
