#!/usr/bin/env bash
# Installs the TypeScript ADK api server (@google/adk + @google/adk-devtools,
# exact versions in package.json / package-lock.json) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/adk/
# and links <repo>/testdata/adk/node_modules to it, because the api server
# bundles agents/<app>/agent.ts with esbuild, which resolves imports from the
# agent file's own location (NODE_PATH is not honoured).
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json and Node ABI (sha256 kept in a stamp
# file; see ../npm-cache.sh). Prints the node_modules path on stdout
# (everything else goes to stderr). Works from any cwd. Needs node + npm and
# the npm registry (first run only). --check: installs nothing, fails
# naming `make deps` when the cache lacks the install (see ../npm-cache.sh).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../npm-cache.sh
. "$here/../npm-cache.sh"
dest="$(npm_cache_dir adk)"
target="$dest/node_modules"

npm_cache_need node
# The node major version matters: sqlite3 builds a native addon.
abi="$(node -p 'process.versions.modules')"
want="$(npm_cache_want "$here" "$abi")"
# The CLI entry point must be there after an install.
npm_cache_install "$here" "$dest" "$want" \
  "$target/@google/adk-devtools/dist/esm/cli_entrypoint.js" "2-3 minutes on a cold cache"

# esbuild (used by the api server to bundle agent.ts) resolves `@google/adk`
# and `zod` from the agent file's directory upwards: point
# testdata/adk/node_modules at the cache (ignored by testdata/adk/.gitignore).
npm_cache_link "$here" "$target"

printf '%s\n' "$target"
