#!/usr/bin/env bash
# Installs the TypeScript ADK api server (@google/adk + @google/adk-devtools,
# exact versions in package.json / package-lock.json) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/adk/
# and links <repo>/testdata/adk/node_modules to it, because the api server
# bundles agents/<app>/agent.ts with esbuild, which resolves imports from the
# agent file's own location (NODE_PATH is not honoured).
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json (sha256 kept in a stamp file).
# Prints the node_modules path on stdout (everything else goes to stderr).
# Works from any cwd. Needs node + npm and the npm registry (first run only).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd -- "$here/../.." && pwd -P)"
cache="${SIDECAR_CACHE:-$repo/.cache}"
dest="$cache/adk"
stamp="$dest/.install-stamp"

command -v node >/dev/null || { echo "install.sh: node not found" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

hash_inputs() {
  local f
  for f in "$here/package.json" "$here/package-lock.json"; do
    [ -f "$f" ] && cat "$f"
  done
  # The node major version matters: sqlite3 builds a native addon.
  node -p 'process.versions.modules'
}
want="$(hash_inputs | sha256sum | cut -d' ' -f1)"

mkdir -p "$dest"
if [ -d "$dest/node_modules" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "install.sh: cache up to date ($dest)" >&2
else
  # One install at a time per cache directory.
  exec 9>"$dest/.install-lock"
  if command -v flock >/dev/null; then flock 9; fi
  if [ -d "$dest/node_modules" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "install.sh: cache up to date ($dest)" >&2
  else
    echo "install.sh: installing into $dest (2-3 minutes on a cold cache)" >&2
    rm -f "$stamp"
    rm -rf "$dest/node_modules"
    cp "$here/package.json" "$dest/package.json"
    if [ -f "$here/package-lock.json" ]; then
      cp "$here/package-lock.json" "$dest/package-lock.json"
      (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error) >&2
    else
      rm -f "$dest/package-lock.json"
      (cd "$dest" && npm install --no-audit --no-fund --loglevel=error) >&2
    fi
    # Sanity: the CLI entry point and the sqlite3 addon must be there.
    test -f "$dest/node_modules/@google/adk-devtools/dist/esm/cli_entrypoint.js"
    printf '%s\n' "$want" >"$stamp"
  fi
fi

# esbuild (used by the api server to bundle agent.ts) resolves `@google/adk`
# and `zod` from the agent file's directory upwards: point
# testdata/adk/node_modules at the cache (ignored by testdata/adk/.gitignore).
link="$here/node_modules"
target="$dest/node_modules"
if [ "$(readlink -- "$link" 2>/dev/null || true)" != "$target" ]; then
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    echo "install.sh: $link exists and is not a symlink; remove it" >&2
    exit 1
  fi
  ln -sfn -- "$target" "$link.tmp.$$"
  mv -fT -- "$link.tmp.$$" "$link"
fi

printf '%s\n' "$target"
