#!/usr/bin/env bash
# Installs actionlint (the version below), the linter of GitHub Actions
# workflows, with `go install` from the Go module proxy into
#   ${SIDECAR_CACHE:-<repo>/.cache}/actionlint/bin/actionlint
# for deploy's TestWorkflows, which lints .github/workflows/*.yml with it.
#
# Skips the install when the cache already holds that version (kept in a
# stamp file beside the binary). Prints the binary's path on stdout
# (everything else goes to stderr). Works from any cwd. Needs go and the
# module proxy (first run only). --check: installs nothing, and fails
# naming `make deps` when the cache lacks that version.
set -euo pipefail

version=v1.7.12

case "$*" in
  "") check= ;;
  --check) check=1 ;;
  *) echo "usage: install.sh [--check]" >&2; exit 2 ;;
esac

repo="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)"
dest="${SIDECAR_CACHE:-$repo/.cache}/actionlint"
bin="$dest/bin/actionlint"
stamp="$dest/.install-stamp"

if [ ! -x "$bin" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$version" ]; then
  if [ -n "$check" ]; then
    echo "actionlint $version is not installed in $dest: run \`make deps\` first" >&2
    exit 1
  fi
  command -v "${GO:-go}" >/dev/null || { echo "install.sh: go not found" >&2; exit 1; }
  echo "installing actionlint $version into $dest" >&2
  GOBIN="$dest/bin" GOFLAGS= "${GO:-go}" install "github.com/rhysd/actionlint/cmd/actionlint@$version" >&2
  printf '%s\n' "$version" >"$stamp"
fi

printf '%s\n' "$bin"
