# shellcheck shell=bash
# What testdata/*/install.sh share: an npm package set, pinned by the
# package.json and package-lock.json beside the script, installed once into
#   ${SIDECAR_CACHE:-<repo>/.cache}/NAME/
# and skipped while that cache holds node_modules installed from the same
# inputs (their sha256 kept in NAME/.install-stamp). One install at a time
# per cache directory (flock, where there is one). Everything it says goes
# to stderr: the scripts' stdout is the path they print.
# SRC below is the script's folder, which holds package.json and
# package-lock.json. Sourced, not run, at the script's top level: it reads
# the script's arguments.
#
# `install.sh --check` installs nothing: it prints the same path when the
# cache holds what an install would leave there, and otherwise exits 1 with a
# message naming `make deps`. Tests run that, so no install ever runs inside a
# test's timeout; `make deps` (which `make test` runs first) installs.
case "$*" in
  "") NPM_CACHE_CHECK= ;;
  --check) NPM_CACHE_CHECK=1 ;;
  *) echo "usage: install.sh [--check]" >&2; exit 2 ;;
esac

# npm_cache_dir NAME: the cache directory of the package set NAME.
npm_cache_dir() {
  local repo
  repo="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
  printf '%s\n' "${SIDECAR_CACHE:-$repo/.cache}/$1"
}

# npm_cache_need CMD...: exits 1 when a command is missing.
npm_cache_need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null || { echo "install.sh: $c not found" >&2; exit 1; }
  done
}

# npm_cache_want SRC [EXTRA]: the sha256 of SRC's package.json,
# package-lock.json (when there is one) and the line EXTRA (when given):
# what the stamp holds.
npm_cache_want() {
  local src=$1
  shift
  {
    cat "$src/package.json"
    if [ -f "$src/package-lock.json" ]; then cat "$src/package-lock.json"; fi
    if [ $# -gt 0 ]; then printf '%s\n' "$1"; fi
  } | sha256sum | cut -d' ' -f1
}

# npm_cache_install SRC DEST WANT PROBE NOTE [NPM_FLAG...]: installs SRC's
# package set into DEST (npm ci with the flags; npm install without a lock file)
# unless DEST's stamp is WANT and the file PROBE is there. NOTE, when not
# empty, is said in parentheses after "installing into DEST". PROBE must
# exist after an install; only then is the stamp written. With --check, a
# missing or stale install is an error instead.
npm_cache_install() {
  local src=$1 dest=$2 want=$3 probe=$4 note=$5
  shift 5
  local stamp="$dest/.install-stamp"
  if npm_cache_fresh "$stamp" "$want" "$probe"; then
    echo "install.sh: cache up to date ($dest)" >&2
    return
  fi
  if [ -n "$NPM_CACHE_CHECK" ]; then
    npm_cache_missing "$src" "$dest has no current install"
  fi
  npm_cache_need npm
  mkdir -p "$dest"
  exec 9>"$dest/.install-lock"
  if command -v flock >/dev/null; then flock 9; fi
  if npm_cache_fresh "$stamp" "$want" "$probe"; then
    echo "install.sh: cache up to date ($dest)" >&2
    return
  fi
  echo "install.sh: installing into $dest${note:+ ($note)}" >&2
  rm -f "$stamp"
  rm -rf "$dest/node_modules"
  cp "$src/package.json" "$dest/package.json"
  if [ -f "$src/package-lock.json" ]; then
    cp "$src/package-lock.json" "$dest/package-lock.json"
    (cd "$dest" && npm ci "$@" --no-audit --no-fund --loglevel=error) >&2
  else
    rm -f "$dest/package-lock.json"
    (cd "$dest" && npm install "$@" --no-audit --no-fund --loglevel=error) >&2
  fi
  test -e "$probe"
  printf '%s\n' "$want" >"$stamp"
}

# npm_cache_link SRC TARGET: links SRC/node_modules to TARGET (the cache's
# node_modules), for package sets whose ES module imports resolve from the
# importing file's folder, where NODE_PATH does not apply. Ignored by git.
npm_cache_link() {
  local link="$1/node_modules" target=$2
  if [ "$(readlink -- "$link" 2>/dev/null || true)" = "$target" ]; then return; fi
  if [ -n "$NPM_CACHE_CHECK" ]; then
    npm_cache_missing "$1" "$link does not point at $target"
  fi
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    echo "install.sh: $link exists and is not a symlink; remove it" >&2
    exit 1
  fi
  ln -sfn -- "$target" "$link.tmp.$$"
  mv -fT -- "$link.tmp.$$" "$link"
}

# npm_cache_missing SRC WHAT: the --check failure: exits 1 saying WHAT and
# how to install.
npm_cache_missing() {
  echo "install.sh --check: $2: run \`make deps\` (or testdata/${1##*/}/install.sh) before the tests" >&2
  exit 1
}

# npm_cache_fresh STAMP WANT PROBE: the install is there and current.
npm_cache_fresh() {
  [ -e "$3" ] && [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}
