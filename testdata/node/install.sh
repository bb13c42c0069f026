#!/usr/bin/env bash
# Installs examples/node's TypeScript toolchain (typescript and @types/node,
# exact versions in examples/node/package.json / package-lock.json: the
# files deploy/examples/Dockerfile.node's build stage runs `npm ci` with)
# into
#   ${SIDECAR_CACHE:-<repo>/.cache}/node/
# for the tests that build the example as that stage does (deploy's
# TestNodeExampleImage, examples' TestAgentsLogNoProbes): they copy this
# node_modules where the stage's `npm ci` would have written it, then run
# the stage's other steps.
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
src="$(cd -- "$here/../../examples/node" && pwd -P)"
dest="$(npm_cache_dir node)"
probe="$dest/node_modules/typescript/bin/tsc"

want="$(npm_cache_want "$src")"
npm_cache_install "$src" "$dest" "$want" "$probe" ""

printf '%s\n' "$dest/node_modules"
