#!/usr/bin/env bash
# Installs the dialect producers' npm packages (ai, @ag-ui/core,
# @ag-ui/encoder, @a2a-js/sdk + express, @langchain/langgraph +
# @langchain/core, openai, @openai/agents, zod; exact versions in package.json /
# package-lock.json) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/dialects/
# and links <repo>/testdata/dialects/node_modules to it, because the
# producers are ES modules and node resolves their imports from the script's
# own location (NODE_PATH is not honoured for `import`).
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json (sha256 kept in a stamp file; see
# ../npm-cache.sh). Prints the node_modules path on stdout (everything else
# goes to stderr). Works from any cwd. Needs node + npm and the npm registry
# (first run only). --check: installs nothing, fails naming `make deps`
# when the cache lacks the install (see ../npm-cache.sh).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../npm-cache.sh
. "$here/../npm-cache.sh"
dest="$(npm_cache_dir dialects)"
target="$dest/node_modules"

npm_cache_need node
want="$(npm_cache_want "$here")"
# Pure JavaScript: no install scripts needed.
npm_cache_install "$here" "$dest" "$want" "$target/ai/package.json" "" --ignore-scripts

# testdata/dialects/node_modules -> the cache (ignored by .gitignore here).
npm_cache_link "$here" "$target"

printf '%s\n' "$target"
