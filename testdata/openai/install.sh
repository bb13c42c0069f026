#!/usr/bin/env bash
# Installs the OpenAI-compatible door's real clients (exact versions in
# package.json / package-lock.json): the `openai` npm client and the Vercel
# AI SDK (`ai` with `@ai-sdk/openai-compatible`), the last versions whose
# engines allow Node 20, into
#   ${SIDECAR_CACHE:-<repo>/.cache}/openai/
# for proxy/openai's client tests, which run client.mjs (NODE_PATH: the
# node_modules directory this prints) against the sidecar's door
# (cmd/sidecar's TestOAuthClients: oauth.mjs, with a token).
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
dest="$(npm_cache_dir openai)"
probe="$dest/node_modules/@ai-sdk/openai-compatible/package.json"

want="$(npm_cache_want "$here")"
# Only the clients' JavaScript is used: no install scripts run.
npm_cache_install "$here" "$dest" "$want" "$probe" "" --ignore-scripts

printf '%s\n' "$dest/node_modules"
