#!/usr/bin/env bash
# Installs @modelcontextprotocol/conformance, the official MCP conformance
# suite (exact version in package.json / package-lock.json), into
#   ${SIDECAR_CACHE:-<repo>/.cache}/mcpconf/
# for proxy/mcp's TestConformance, which runs its CLI against the MCP door.
#
# The suite asks for Node >= 22: its dist/index.js imports globSync from
# "fs", which Node 20 lacks, and fails to load. So after `npm ci` this copies
# fs-glob-shim.mjs (node:fs plus the one globSync the suite calls) beside the
# dist and points that import at it; the shim's sha256 is in the stamp. See
# docs/development.md.
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json + shim (../npm-cache.sh). Prints the
# path of the suite's CLI (dist/index.js) on stdout (everything else goes to
# stderr). Works from any cwd. --check: installs nothing, fails naming
# `make deps` when the cache lacks the shimmed install.
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../npm-cache.sh
. "$here/../npm-cache.sh"
dest="$(npm_cache_dir mcpconf)"
dist="$dest/node_modules/@modelcontextprotocol/conformance/dist"
probe="$dist/index.js"

want="$(npm_cache_want "$here" "shim $(sha256sum <"$here/fs-glob-shim.mjs")")"
# Only the suite's JavaScript is used: no install scripts run.
npm_cache_install "$here" "$dest" "$want" "$probe" "" --ignore-scripts

# The shim, applied after every fresh install (the stamp names the shim, so a
# new shim reinstalls): the import's one spelling in the pinned dist. A dist
# whose import is neither shimmed nor that spelling is an error, not a skip.
if ! grep -q 'from"./fs-glob-shim.mjs"' "$probe"; then
  if [ -n "$NPM_CACHE_CHECK" ]; then
    npm_cache_missing "$here" "$probe is not shimmed for Node 20"
  fi
  grep -q 'globSync as a,mkdtempSync as o,promises as s,readFileSync as c,readdirSync as l,writeFileSync as u}from"fs"' "$probe" ||
    { echo "install.sh: $probe imports globSync in a way the shim does not know" >&2; exit 1; }
  cp "$here/fs-glob-shim.mjs" "$dist/fs-glob-shim.mjs"
  sed -i 's/writeFileSync as u}from"fs"/writeFileSync as u}from".\/fs-glob-shim.mjs"/' "$probe"
  echo "install.sh: shimmed fs.globSync for Node $(node --version)" >&2
fi

printf '%s\n' "$probe"
