#!/usr/bin/env bash
# Installs oidc-provider (exact version in package.json /
# package-lock.json), a real OAuth 2.0 authorization server, into
#   ${SIDECAR_CACHE:-<repo>/.cache}/oidc/
# for cmd/sidecar's TestOAuthClients, which runs provider.mjs (NODE_PATH:
# the node_modules directory this prints) as the sidecar's token issuer.
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
dest="$(npm_cache_dir oidc)"
probe="$dest/node_modules/oidc-provider/package.json"

want="$(npm_cache_want "$here")"
# Only the provider's JavaScript is used: no install scripts run.
npm_cache_install "$here" "$dest" "$want" "$probe" "" --ignore-scripts

printf '%s\n' "$dest/node_modules"
