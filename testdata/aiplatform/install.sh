#!/usr/bin/env bash
# Installs @google-cloud/aiplatform (exact version in package.json /
# package-lock.json) into
#   ${SIDECAR_CACHE:-<repo>/.cache}/aiplatform/
# for deploy's TestRequestMatchesProtos, which reads the ReasoningEngine
# messages from the package's build/protos/protos.json, and for
# proxy/emulator's TestNodeClient, which runs client.js (NODE_PATH: the
# node_modules directory above that path) against sidecar dev.
#
# Skips `npm ci` when the cache already holds node_modules installed from the
# same package.json + package-lock.json (sha256 kept in a stamp file).
# Prints the path of protos.json on stdout (everything else goes to stderr).
# Works from any cwd. Needs npm and the npm registry (first run only).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd -- "$here/../.." && pwd -P)"
cache="${SIDECAR_CACHE:-$repo/.cache}"
dest="$cache/aiplatform"
stamp="$dest/.install-stamp"
protos="$dest/node_modules/@google-cloud/aiplatform/build/protos/protos.json"

command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

want="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
fresh() { [ -f "$protos" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }

mkdir -p "$dest"
if fresh; then
  echo "install.sh: cache up to date ($dest)" >&2
else
  # One install at a time per cache directory.
  exec 9>"$dest/.install-lock"
  if command -v flock >/dev/null; then flock 9; fi
  if fresh; then
    echo "install.sh: cache up to date ($dest)" >&2
  else
    echo "install.sh: installing into $dest" >&2
    rm -f "$stamp"
    rm -rf "$dest/node_modules"
    cp "$here/package.json" "$here/package-lock.json" "$dest/"
    # Only the package's data is read: no install scripts run.
    (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
    test -f "$protos"
    printf '%s\n' "$want" >"$stamp"
  fi
fi

printf '%s\n' "$protos"
