#!/usr/bin/env bash
# CPU and allocation profiles of the sidecar under load, on the unary path
# and on the per-record streaming path, plus the deframer benchmarks of
# upstream/. Prints `go tool pprof -top` of each; the profiles and the
# binaries they need are kept in bench/out/profile/.
#
#   bench/profile.sh          (SECONDS_PER_PROFILE=10 by default)
#   PROFILES="idle unary" bench/profile.sh    only some of idle, unary,
#                                             stream, deframe, live,
#                                             liveidle
#
# live and liveidle (issue 39) are a conversation's frames through
# AgentCore's /ws (load frames: 32 connections, 16 frames in flight
# each) and 1,000 idle conversations, on a second sidecar whose map has a
# bidi method to the agent's /live echo; they run only when named.
#
# The sidecar is the unchanged cmd/sidecar with one file added at build
# time (go build -overlay, bench/pprof/pprof.go.in) that serves
# net/http/pprof on its own 127.0.0.1 port, never on the public one.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
bin=bench/bin
out=bench/out/profile
secs=${SECONDS_PER_PROFILE:-10}
mkdir -p "$bin" "$out"

overlay=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$overlay"
}
trap cleanup EXIT

printf '{"Replace":{"%s/cmd/sidecar/zz_bench_pprof.go":"%s/bench/pprof/pprof.go.in"}}\n' "$PWD" "$PWD" >"$overlay/overlay.json"
CGO_ENABLED=0 "$GO" build -trimpath -overlay "$overlay/overlay.json" -o "$out/sidecar-pprof" ./cmd/sidecar
"$GO" build -o "$bin/agent" ./bench/cmd/agent
"$GO" build -o "$bin/load" ./bench/cmd/load

mapfile -t addrs < <("$bin/load" ports 3)
agent_addr=${addrs[0]} sidecar_addr=${addrs[1]} pprof_addr=${addrs[2]}
"$bin/agent" -listen "$agent_addr" 2>"$overlay/agent.log" &
pids+=($!)
cat >"$overlay/sidecar.yaml" <<YAML
upstream:
  url: http://$agent_addr
limits: {concurrency: 10000}
methods:
  query:        {call: POST /query}
  stream_query: {mode: stream, call: POST /stream}
YAML
SIDECAR_PPROF=$pprof_addr "$out/sidecar-pprof" --config "$overlay/sidecar.yaml" --listen "$sidecar_addr" 2>"$overlay/sidecar.log" &
pids+=($!)
for _ in $(seq 200); do
	curl -sf "http://$sidecar_addr/healthz" >/dev/null && break
	sleep 0.05
done
curl -sf "http://$sidecar_addr/healthz" >/dev/null

# profile NAME LOAD-ARGS…: runs the load for secs+4 seconds and takes a
# CPU profile and an allocation profile (delta) over secs of it.
# PPROF_ADDR and LOAD_ARGS, when set, are the sidecar's pprof address and
# what addresses the load (default: the first sidecar, -contract).
profile() {
	local name=$1
	shift
	local pprof_addr=${PPROF_ADDR:-$pprof_addr}
	local target=(${LOAD_ARGS:--addr $sidecar_addr -contract})
	"$bin/load" "$@" "${target[@]}" -d "$((secs + 4))s" >"$out/$name.load.txt" &
	local load=$!
	sleep 2
	curl -sf -o "$out/$name.cpu.pprof" "http://$pprof_addr/debug/pprof/profile?seconds=$secs" &
	local c1=$!
	curl -sf -o "$out/$name.allocs.pprof" "http://$pprof_addr/debug/pprof/allocs?seconds=$secs" &
	local c2=$!
	wait "$c1" "$c2" "$load"
	curl -sf -o "$out/$name.mutex.pprof" "http://$pprof_addr/debug/pprof/mutex"
	echo "== $name: $(cat "$out/$name.load.txt")"
	echo "-- CPU (flat), top 30"
	"$GO" tool pprof -top -nodecount=30 "$out/sidecar-pprof" "$out/$name.cpu.pprof" 2>/dev/null
	echo "-- CPU (cumulative), top 40"
	"$GO" tool pprof -top -cum -nodecount=40 "$out/sidecar-pprof" "$out/$name.cpu.pprof" 2>/dev/null
	echo "-- allocated bytes, top 20"
	"$GO" tool pprof -top -sample_index=alloc_space -nodecount=20 "$out/sidecar-pprof" "$out/$name.allocs.pprof" 2>/dev/null
	echo "-- allocated objects, top 20"
	"$GO" tool pprof -top -sample_index=alloc_objects -nodecount=20 "$out/sidecar-pprof" "$out/$name.allocs.pprof" 2>/dev/null
	echo
}

# idle N: N idle open streams; the heap in use (after a GC), the
# goroutines, and the RSS beside the idle RSS.
idle() {
	local n=$1 pid=${pids[1]}
	local rss0
	rss0=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
	"$bin/load" idle -addr "$sidecar_addr" -contract -n "$n" -d 8s >"$out/idle.load.txt" &
	local load=$!
	for _ in $(seq 300); do
		grep -q open "$out/idle.load.txt" 2>/dev/null && break
		sleep 0.1
	done
	sleep 1
	local rss1
	rss1=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
	curl -sf -o "$out/idle.heap.pprof" "http://$pprof_addr/debug/pprof/heap?gc=1"
	curl -sf -o "$out/idle.goroutine.txt" "http://$pprof_addr/debug/pprof/goroutine?debug=1"
	curl -sf -o "$out/idle.memstats.txt" "http://$pprof_addr/debug/pprof/heap?debug=1"
	wait "$load"
	echo "== idle: $n open idle streams: VmRSS $rss0 kB idle, $rss1 kB held: $(((rss1 - rss0) / n)) kB per stream"
	echo "-- runtime.MemStats with them open (bytes):"
	grep -E '^# (HeapInuse|Stack|MSpan|HeapIdle|HeapReleased|Sys) ' "$out/idle.memstats.txt" | sed 's/^#/  /'
	echo "-- goroutines: $(head -1 "$out/idle.goroutine.txt")"
	grep -E '^[0-9]+ @' "$out/idle.goroutine.txt" | sort -rn | head -6 | while read -r count _; do echo "   $count goroutines"; done
	echo "-- heap in use, top 15"
	"$GO" tool pprof -top -sample_index=inuse_space -nodecount=15 "$out/sidecar-pprof" "$out/idle.heap.pprof" 2>/dev/null
	echo
}

# live_sidecar: a second sidecar, for the live profiles, whose map has a
# bidi method to the agent's /live and AgentCore's /ws conversing with it.
live_sidecar() {
	mapfile -t live_addrs < <("$bin/load" ports 2)
	live_addr=${live_addrs[0]} live_pprof=${live_addrs[1]}
	cat >"$overlay/live.yaml" <<YAML
upstream:
  url: http://$agent_addr
limits: {concurrency: 10000, live: {connections: 2000}}
methods:
  query:    {call: POST /query}
  converse: {mode: bidi, call: GET /live}
protocols:
  agentcore: {mount: /, method: query, ws: converse}
YAML
	SIDECAR_PPROF=$live_pprof "$out/sidecar-pprof" --config "$overlay/live.yaml" --listen "$live_addr" 2>"$overlay/live.log" &
	live_pid=$!
	pids+=("$live_pid")
	for _ in $(seq 200); do
		curl -sf "http://$live_addr/healthz" >/dev/null && break
		sleep 0.05
	done
	curl -sf "http://$live_addr/healthz" >/dev/null
}

# liveidle N: N idle conversations through /ws; as idle does for streams.
liveidle() {
	local n=$1 pid=$live_pid
	local rss0
	sleep 1
	rss0=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
	"$bin/load" wsidle -addr "$live_addr" -path /ws -n "$n" -d 8s >"$out/liveidle.load.txt" &
	local load=$!
	for _ in $(seq 300); do
		grep -q open "$out/liveidle.load.txt" 2>/dev/null && break
		sleep 0.1
	done
	sleep 1
	local rss1
	rss1=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
	curl -sf -o "$out/liveidle.heap.pprof" "http://$live_pprof/debug/pprof/heap?gc=1"
	curl -sf -o "$out/liveidle.goroutine.txt" "http://$live_pprof/debug/pprof/goroutine?debug=1"
	curl -sf -o "$out/liveidle.memstats.txt" "http://$live_pprof/debug/pprof/heap?debug=1"
	wait "$load"
	echo "== liveidle: $n idle conversations: VmRSS $rss0 kB idle, $rss1 kB held: $(((rss1 - rss0) / n)) kB per conversation"
	echo "-- runtime.MemStats with them open (bytes):"
	grep -E '^# (HeapInuse|Stack|MSpan|HeapIdle|HeapReleased|Sys) ' "$out/liveidle.memstats.txt" | sed 's/^#/  /'
	echo "-- goroutines: $(head -1 "$out/liveidle.goroutine.txt")"
	grep -E '^[0-9]+ @' "$out/liveidle.goroutine.txt" | sort -rn | head -6 | while read -r count _; do echo "   $count goroutines"; done
	echo "-- heap in use, top 15"
	"$GO" tool pprof -top -sample_index=inuse_space -nodecount=15 "$out/sidecar-pprof" "$out/liveidle.heap.pprof" 2>/dev/null
	echo
}

want=" ${PROFILES:-idle unary stream deframe} "
if [[ $want == *" live "* || $want == *" liveidle "* ]]; then live_sidecar; fi
{
	[[ $want != *" idle "* ]] || idle 1000
	[[ $want != *" unary "* ]] || profile unary unary -c 32
	[[ $want != *" stream "* ]] || profile stream stream -streams 8 -n 50000 -size 100
	[[ $want != *" liveidle "* ]] || liveidle 1000
	[[ $want != *" live "* ]] || PPROF_ADDR=$live_pprof LOAD_ARGS="-addr $live_addr -path /ws" profile live frames -c 32 -window 16 -size 100
	if [[ $want == *" deframe "* ]]; then
		echo "== upstream deframer benchmarks (go test -bench, -cpuprofile)"
		"$GO" test -run '^$' -bench 'SSE|Lines' -benchmem -count 1 -cpuprofile "$out/deframe.cpu.pprof" -o "$out/upstream.test" ./upstream
		"$GO" tool pprof -top -nodecount=25 "$out/upstream.test" "$out/deframe.cpu.pprof" 2>/dev/null
	fi
} | tee "$out/profile.txt"
