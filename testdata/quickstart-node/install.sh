#!/usr/bin/env bash
# Installs examples/quickstart/node's packages (Express and the TypeScript
# toolchain, exact versions in its package.json / package-lock.json) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/quickstart-node/
# for docs' TestCommands, which builds and runs that agent as
# docs/quickstart-node.md shows, and deploy's TestQuickstartImages, with
# this node_modules where `npm ci` would have written it.
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
src="$(cd -- "$here/../../examples/quickstart/node" && pwd -P)"
dest="$(npm_cache_dir quickstart-node)"
probe="$dest/node_modules/express/package.json"

want="$(npm_cache_want "$src")"
npm_cache_install "$src" "$dest" "$want" "$probe" ""

printf '%s\n' "$dest/node_modules"
