#!/usr/bin/env bash
# `make image-check`: prove what can be proved of the image without a
# Docker engine.
#
#  1. Read the Dockerfile: its build stage (ARG, ENV, WORKDIR, COPY, RUN)
#     and its final stage.
#  2. Build as that stage would: in a copy of the build context that
#     .dockerignore leaves, in a clean environment holding only the stage's
#     ARGs and ENVs (and GOTOOLCHAIN=local, as golang images set), running
#     each RUN line with sh -c, the output path of the final stage's
#     COPY --from=build rewritten into a temporary directory.
#  3. Check the binary is static and stripped: file, ldd, readelf when
#     present, and always debug/elf + debug/buildinfo (TestImageBinary):
#     no interpreter, no dynamic section, no symbols or DWARF (-s -w),
#     CGO_ENABLED=0, -trimpath; the stamped version shows in step 4.
#  4. Run it: `sidecar version` (as the final stage's USER when this runs
#     as root), `validate` and `class-methods` on every example config.
#  5. Check the final stage runs as a numeric non-root user, and hold the
#     Dockerfiles and .dockerignore to their tests (TestDockerfile,
#     TestExampleDockerfiles, TestDockerignore).
#  6. Run each deploy/examples image the way its ENTRYPOINT and CMD say
#     (the sidecar starting the example agent, over a Unix socket, $PORT
#     set as the platform does): /healthz, one unary call, one stream,
#     then SIGTERM and a clean exit; the node one (TypeScript) after its
#     build stage, run here by TestNodeExampleImage.
#  7. bash -n, and shellcheck when installed, on the deploy scripts.
#
# Exits non-zero on the first failure. VERSION (default: git describe, as
# the Makefile) is the version stamped. KEEP=1 keeps the work directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
work=$(mktemp -d "${TMPDIR:-/tmp}/image-check.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ ${KEEP:-0} == 1 ]]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

checks=0
step() { printf '== %s\n' "$*"; }
ok() { checks=$((checks + 1)); printf '   ok  %s\n' "$*"; }
fail() { printf 'image-check: FAIL: %s\n' "$*" >&2; exit 1; }

# json_list: the strings of a JSON array on stdin, one per line.
json_list() {
  if command -v jq >/dev/null 2>&1; then
    jq -r '.[]'
  else
    python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)))'
  fi
}

# instructions FILE: the Dockerfile's instructions, one per line, with
# continuation lines joined and comments dropped.
instructions() {
  awk '
    /^[[:space:]]*#/ { next }
    { sub(/^[[:space:]]+/, ""); sub(/[[:space:]]+$/, "") }
    buf == "" && $0 == "" { next }
    /\\$/ { buf = buf substr($0, 1, length($0) - 1) " "; next }
    { print buf $0; buf = "" }
  ' "$1"
}

# ---------------------------------------------------------------------------
step "1. read Dockerfile"
declare -A global_args=() build_args=() build_env=()
build_runs=() build_copies=() final_lines=()
stage=-1 build_stage_name='' final_base='' build_base='' workdir=/
while IFS= read -r line; do
  cmd=${line%% *}
  rest=${line#"$cmd"}
  rest=${rest# }
  cmd=${cmd^^}
  if [[ $cmd == FROM ]]; then
    stage=$((stage + 1))
    read -r -a words <<<"$rest"
    base='' name=
    for ((i = 0; i < ${#words[@]}; i++)); do
      w=${words[i]}
      if [[ $w == --* ]]; then continue; fi
      if [[ ${w^^} == AS ]]; then name=${words[i + 1]}; i=$((i + 1)); continue; fi
      base=$w
    done
    # Expand ${ARG} from the global ARG defaults.
    while [[ $base =~ \$\{?([A-Za-z_][A-Za-z0-9_]*)\}? ]]; do
      var=${BASH_REMATCH[1]}
      [[ -v "global_args[$var]" ]] || fail "FROM $base: ARG $var has no default"
      base=${base//"${BASH_REMATCH[0]}"/${global_args[$var]}}
    done
    if ((stage == 0)); then build_base=$base build_stage_name=$name; fi
    final_base=$base
    final_lines=()
    continue
  fi
  if ((stage < 0)); then
    [[ $cmd == ARG ]] || fail "$cmd before the first FROM"
    k=${rest%%=*}
    global_args[$k]=${rest#*=}
    continue
  fi
  final_lines+=("$cmd $rest")
  ((stage == 0)) || continue
  case $cmd in
    ARG)
      for a in $rest; do
        k=${a%%=*}
        if [[ $a == *=* ]]; then build_args[$k]=${a#*=}; else build_args[$k]=; fi
      done
      ;;
    ENV)
      for a in $rest; do
        [[ $a == *=* ]] || fail "ENV $rest: use the KEY=VALUE form"
        build_env[${a%%=*}]=${a#*=}
      done
      ;;
    WORKDIR) workdir=$rest ;;
    COPY) build_copies+=("$rest") ;;
    RUN) build_runs+=("$rest") ;;
  esac
done < <(instructions Dockerfile)

((stage >= 1)) || fail "Dockerfile has $((stage + 1)) stage(s): want a build stage and a final one"
[[ $build_base == golang:* ]] || fail "build stage FROM $build_base: want golang:<version>"
go_mod=$(sed -n 's/^go \([0-9]*\.[0-9]*\).*/\1/p' go.mod)
[[ $build_base == "golang:$go_mod" ]] || fail "builder $build_base does not match go.mod's go $go_mod"
ok "build stage '$build_stage_name' FROM $build_base (go.mod: go $go_mod); final stage FROM $final_base"

out_src=
for l in "${final_lines[@]}"; do
  if [[ $l =~ ^COPY\ --from=$build_stage_name\ ([^ ]+)\ /sidecar$ ]]; then out_src=${BASH_REMATCH[1]}; fi
done
[[ -n $out_src ]] || fail "final stage has no COPY --from=$build_stage_name <binary> /sidecar"
((${#build_runs[@]} > 0)) || fail "build stage has no RUN"
printf '%s\n' "${build_runs[@]}" | grep -q 'go build' || fail "build stage has no RUN … go build"
ok "the final stage copies $out_src from the build stage"

# ---------------------------------------------------------------------------
step "2. build as the build stage does (VERSION=$VERSION)"
ctx=$work/context
mkdir -p "$ctx" "$work/out"
grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' .dockerignore >"$work/dockerignore" || true
# shellcheck disable=SC2046 # the top-level names, as the context's root
tar -C "$root" --anchored --no-wildcards-match-slash --exclude-from="$work/dockerignore" \
  -cf - $(ls -A) | tar -C "$ctx" -xf -
for c in "${build_copies[@]}"; do
  read -r -a srcs <<<"$c"
  unset 'srcs[${#srcs[@]}-1]'
  for s in "${srcs[@]}"; do
    [[ $s == --* ]] && continue
    [[ -e $ctx/$s ]] || fail "COPY $c: $s is not in the build context (.dockerignore?)"
  done
done
ok "context: $(find "$ctx" -type f | wc -l) files after .dockerignore; every COPY source present"

# The build environment: the stage's ARGs (VERSION stamped; TARGETOS and
# TARGETARCH empty, as for a native build) and ENVs, nothing else of ours.
envs=(PATH="$PATH" HOME="$HOME" GOTOOLCHAIN=local
  GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOPATH="$(go env GOPATH)"
  GOPROXY="$(go env GOPROXY)" GOSUMDB="$(go env GOSUMDB)" GOPRIVATE="$(go env GOPRIVATE)"
  GONOSUMDB="$(go env GONOSUMDB)" GONOPROXY="$(go env GONOPROXY)")
for k in "${!build_args[@]}"; do
  v=${build_args[$k]}
  [[ $k == VERSION ]] && v=$VERSION
  [[ $k == TARGETOS || $k == TARGETARCH ]] && v=
  envs+=("$k=$v")
done
for k in "${!build_env[@]}"; do envs+=("$k=${build_env[$k]}"); done
[[ ${build_env[CGO_ENABLED]:-} == 0 ]] || fail "build stage does not set ENV CGO_ENABLED=0"

start=$SECONDS
for r in "${build_runs[@]}"; do
  r=${r//"$out_src"/$work/out/sidecar}
  printf '   $ %s\n' "$r"
  (cd "$ctx" && env -i "${envs[@]}" sh -c "$r") || fail "RUN $r"
done
bin=$work/out/sidecar
[[ -x $bin ]] || fail "the build wrote no $bin"
ok "built $(du -h "$bin" | cut -f1) in $((SECONDS - start))s (WORKDIR $workdir = the context copy)"

# ---------------------------------------------------------------------------
step "3. a static, stripped binary"
if command -v file >/dev/null 2>&1; then
  desc=$(file -b "$bin")
  [[ $desc == *"statically linked"* ]] || fail "file: $desc"
  [[ $desc != *"not stripped"* ]] || fail "file: $desc"
  ok "file: ${desc%%, BuildID*}"
fi
if command -v ldd >/dev/null 2>&1; then
  l=$(ldd "$bin" 2>&1 || true)
  [[ $l == *"not a dynamic executable"* || $l == *"statically linked"* ]] || fail "ldd: $l"
  ok "ldd: $(printf '%s' "$l" | tr -d '\t')"
fi
if command -v readelf >/dev/null 2>&1; then
  ! readelf -lW "$bin" | grep -q INTERP || fail "readelf: the binary has a program interpreter"
  readelf -d "$bin" | grep -q 'no dynamic section' || fail "readelf: the binary has a dynamic section"
  ok "readelf: no INTERP, no dynamic section"
fi
SIDECAR_IMAGE_CHECK_BINARY=$bin \
  go test -count=1 -run '^(TestImageBinary|TestDockerfile|TestExampleDockerfiles|TestDockerignore)$' ./deploy/ >"$work/gotest" 2>&1 ||
  { cat "$work/gotest" >&2; fail "go test (TestImageBinary, TestDockerfile, TestExampleDockerfiles, TestDockerignore)"; }
ok "debug/elf + debug/buildinfo: ET_EXEC, no PT_INTERP/PT_DYNAMIC, no symbols or DWARF (-s -w), CGO_ENABLED=0, -trimpath, GOOS=linux"
ok "TestDockerfile, TestExampleDockerfiles, TestDockerignore"

# ---------------------------------------------------------------------------
step "4. run it"
got=$(env -i "$bin" version) || fail "sidecar version"
[[ $got == "sidecar $VERSION" ]] || fail "sidecar version printed '$got', want 'sidecar $VERSION'"
ok "sidecar version (empty environment): $got"

user=
for l in "${final_lines[@]}"; do [[ $l == USER\ * ]] && user=${l#USER }; done
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null 2>&1 && [[ $user =~ ^([0-9]+)(:([0-9]+))?$ ]]; then
  chmod 755 "$work" "$work/out"
  got=$(env -i setpriv --reuid="${BASH_REMATCH[1]}" --regid="${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}" --clear-groups "$bin" version) ||
    fail "sidecar version as $user"
  ok "sidecar version as uid:gid $user: $got"
fi
for conf in examples/*/sidecar.yaml; do
  out=$("$bin" validate --config "$conf") || fail "sidecar validate --config $conf"
  ok "validate: $out"
  "$bin" class-methods --config "$conf" | grep -q '"api_mode"' || fail "class-methods --config $conf"
done
ok "class-methods on every example config"

# ---------------------------------------------------------------------------
step "5. the final stage runs as a non-root user"
[[ -n $user ]] || fail "final stage has no USER"
uid=${user%%:*} gid=${user#*:}
[[ $uid =~ ^[0-9]+$ && $uid != 0 ]] || fail "final stage USER $user: want a numeric non-zero uid"
[[ $gid =~ ^[0-9]+$ && $gid != 0 ]] || fail "final stage USER $user: want a numeric non-zero gid"
ok "USER $user on $final_base"
for l in "${final_lines[@]}"; do
  [[ $l == 'ENTRYPOINT ["/sidecar"]' ]] && ep=1
  [[ $l == 'EXPOSE 8080' ]] && ex=1
done
[[ ${ep:-} == 1 ]] || fail 'final stage: want ENTRYPOINT ["/sidecar"]'
[[ ${ex:-} == 1 ]] || fail 'final stage: want EXPOSE 8080'
ok 'ENTRYPOINT ["/sidecar"], EXPOSE 8080'

# ---------------------------------------------------------------------------
step "6. the example images, run as their ENTRYPOINT and CMD say"
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 20000))
  fi
}
smoke() {
  local lang=$1 df=deploy/examples/Dockerfile.$1 entry=() cmdline=() argv=() a l
  local ctxdir=examples/$1 conf=$work/$1.yaml port pid body status
  while IFS= read -r l; do
    case $l in
      ENTRYPOINT\ \[*) mapfile -t entry < <(json_list <<<"${l#ENTRYPOINT }") ;;
      CMD\ \[*) mapfile -t cmdline < <(json_list <<<"${l#CMD }") ;;
    esac
  done < <(instructions "$df")
  ((${#entry[@]} > 0 && ${#cmdline[@]} > 0)) || fail "$df: no JSON ENTRYPOINT or CMD"
  command -v "${cmdline[0]}" >/dev/null 2>&1 || { printf '   skip %s: %s not installed\n' "$lang" "${cmdline[0]}"; return; }
  # The image's config, with the agent on a Unix socket: no fixed port to
  # collide with whatever else runs here.
  sed "s#^\([[:space:]]*url:\).*#\1 unix://$work/$lang.sock#" "$ctxdir/sidecar.yaml" >"$conf"
  for a in "${entry[@]}" "${cmdline[@]}"; do
    case $a in
      /sidecar) argv+=("$bin") ;;
      /etc/sidecar.yaml) argv+=("$conf") ;;
      *) argv+=("$a") ;;
    esac
  done
  port=$(free_port)
  (cd "$ctxdir" && exec env -i PATH="$PATH" HOME="$HOME" PORT="$port" "${argv[@]}") >"$work/$lang.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 150); do
    status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
    [[ $status == 200 ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/$lang.log" >&2; fail "$lang: the sidecar exited before /healthz answered"; }
    sleep 0.1
  done
  [[ $status == 200 ]] || { cat "$work/$lang.log" >&2; fail "$lang: /healthz answered $status after 15s"; }
  body=$(curl -sS "http://127.0.0.1:$port/api/reasoning_engine" -d '{"class_method": "query", "input": {"message": "hi"}}')
  [[ $body == '{"output":'* && $body == *hi* ]] || fail "$lang: query answered $body"
  l=$(curl -sS -N "http://127.0.0.1:$port/api/stream_reasoning_engine" -d '{"class_method": "stream_query", "input": {"message": "one two"}}' | wc -l)
  ((l >= 2)) || fail "$lang: stream_query gave $l lines"
  kill -TERM "$pid"
  local code=0
  wait "$pid" || code=$?
  ((code == 0)) || { cat "$work/$lang.log" >&2; fail "$lang: exit code $code after SIGTERM, want 0"; }
  ok "$lang: ${entry[*]} ${cmdline[*]} → /healthz 200, query $body, $l stream lines, SIGTERM → exit 0"
}
command -v curl >/dev/null 2>&1 || fail "curl is required"
smoke python
# The node example builds (TypeScript): TestNodeExampleImage runs its
# Dockerfile's build stage here (its `npm ci` from testdata/node's cache,
# which `make deps` fills), then the final stage's ENTRYPOINT and CMD the
# way smoke does, with this binary.
SIDECAR_IMAGE_CHECK_BINARY=$bin go test -count=1 -run '^TestNodeExampleImage$' ./deploy/ >"$work/node-test" 2>&1 ||
  { cat "$work/node-test" >&2; fail "node: TestNodeExampleImage"; }
ok "node: build stage (npm ci, npm run build, npm prune --omit=dev), then ENTRYPOINT+CMD → /healthz 200, query, stream, SIGTERM → exit 0 (TestNodeExampleImage)"

# ---------------------------------------------------------------------------
step "7. deploy scripts"
scripts=(deploy/image-check.sh deploy/agent-platform/*.sh)
for s in "${scripts[@]}"; do bash -n "$s" || fail "bash -n $s"; done
ok "bash -n: ${scripts[*]}"
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck -x "${scripts[@]}" || fail "shellcheck"
  ok "shellcheck -x: clean"
else
  printf '   skip shellcheck: not installed (apt-get install shellcheck)\n'
fi

printf 'image-check: ok (%d checks, %ds)\n' "$checks" "$SECONDS"
