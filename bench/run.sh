#!/usr/bin/env bash
# The side-by-side benchmark of issue 6 (what `make bench` runs): the
# stand-in agent, nginx as a plain reverse proxy to it, the least proxy Go's
# net/http can make (the floor for any net/http proxy), and the sidecar in
# front of it, measured interleaved in one run; prints one Markdown table.
#
#   bench/run.sh            full run (bounded at 22 minutes)
#   QUICK=1 bench/run.sh    short run, about 2 minutes (bounded at 6.2)
#   ONLY=unary,memory ...   only those rows (unary, throughput, latency,
#                           firstline, memory, startup, ways, state,
#                           auth, live, parts, dialects), or
#                           floor: the floor ladder (issue 23), unary c=32
#                           through each rung of bench/cmd/goproxy -mode
#                           ladder and the sidecar with and without
#                           metrics; only when named
#   BASELINE=<rev> ...      before and after in one run: the sidecar of git
#                           revision <rev> as well, as one more variant
#                           (sidecar@<rev>, same config, same rounds), and a
#                           "sidecar / baseline" ratio column
#   VARIANT_NETHTTP=1 ...   the sidecar built with -tags nethttp as well (its
#                           agent client is net/http's http.Transport), as
#                           one more variant (sidecar-nethttp, same config,
#                           same rounds), a "sidecar-nethttp / sidecar"
#                           ratio column and each sidecar's spread
#
# Builds what it needs into bench/bin/, installs Debian's nginx-light when
# there is no nginx (NGINX=/path/to/nginx to use another), listens on
# 127.0.0.1 only, and stops every process it started by its PID. The table
# is also written to bench/out/last.md. KEEP=1 keeps the work directory
# (configs and logs of the agent, nginx and the sidecar).
#
# The dialect rows (issue 23) are package dialect's BenchmarkDialect: the
# mapping stage per dialect and emit mode, in-process, from a test binary
# (bench/bin/dialect.test); with BASELINE, the same benchmark file built
# against the baseline's package (bench/bin/dialect-base.test), the two
# run in alternating rounds. Their table follows the main one.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
bin=bench/bin
mkdir -p "$bin" bench/out

echo "bench: building the sidecar, the stand-in agent, the Go reference proxy and the load generator" >&2
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X main.version=$version" -o "$bin/sidecar" ./cmd/sidecar
"$GO" build -o "$bin/agent" ./bench/cmd/agent
"$GO" build -o "$bin/goproxy" ./bench/cmd/goproxy
"$GO" build -o "$bin/load" ./bench/cmd/load

# Which rows: the dialect rows are this script's, the others load's.
dialects=1
load_only=${ONLY:-}
if [ -n "${ONLY:-}" ]; then
	case ",$ONLY," in *,dialects,*) ;; *) dialects=0 ;; esac
	load_only=$(echo ",$ONLY," | sed 's/,dialects,/,/g; s/^,//; s/,$//')
fi
if [ "$dialects" = 1 ]; then
	"$GO" test -c -o "$bin/dialect.test" ./dialect
fi

# BASELINE=<rev>: the sidecar of that revision, built the same way from a
# copy of its tree (git archive into a temporary directory, removed after).
if [ -n "${BASELINE:-}" ]; then
	base_rev=$(git rev-parse --short --verify "$BASELINE^{commit}")
	base_version=$(git describe --tags --always "$base_rev")
	echo "bench: building the sidecar of $BASELINE ($base_rev) as the baseline" >&2
	root=$PWD
	base_tree=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-base-XXXXXX")
	trap 'rm -rf "$base_tree"' EXIT
	git archive "$base_rev" | tar -x -C "$base_tree"
	(cd "$base_tree" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X main.version=$base_version" -o "$root/$bin/sidecar-base" ./cmd/sidecar)
	if [ "$dialects" = 1 ]; then
		# This tree's benchmark against the baseline's package: the same
		# streams, measured the same way.
		cp dialect/bench_test.go "$base_tree/dialect/bench_test.go"
		(cd "$base_tree" && "$GO" test -c -o "$root/$bin/dialect-base.test" ./dialect)
	fi
	rm -rf "$base_tree"
	trap - EXIT
fi

# VARIANT_NETHTTP=1: the same tree built with -tags nethttp.
if [ "${VARIANT_NETHTTP:-0}" = 1 ]; then
	echo "bench: building the sidecar with -tags nethttp (net/http's Transport to the agent)" >&2
	CGO_ENABLED=0 "$GO" build -tags nethttp -trimpath -ldflags "-s -w -X main.version=$version-nethttp" -o "$bin/sidecar-nethttp" ./cmd/sidecar
fi

# nginx-light from Debian's packages, when no nginx is installed. A
# policy-rc.d that forbids starting services (as Debian's Docker images
# ship) keeps the package from starting a system nginx on port 80.
install_nginx() {
	local sudo="" policy=/usr/sbin/policy-rc.d made=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	echo "bench: installing nginx-light" >&2
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		made=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! $sudo apt-get install -y -q nginx-light >/dev/null 2>&1; then
		$sudo apt-get update -q >/dev/null
		$sudo apt-get install -y -q nginx-light >/dev/null
	fi
	if [ -n "$made" ]; then $sudo rm -f "$policy"; fi
}
NGINX=${NGINX:-$(command -v nginx || true)}
if [ -z "$NGINX" ] && [ -x /usr/sbin/nginx ]; then NGINX=/usr/sbin/nginx; fi
if [ -z "$NGINX" ]; then
	install_nginx
	NGINX=/usr/sbin/nginx
fi

# 10,000 idle streams need two descriptors each in the proxy: raise the
# soft limit as far as the hard one allows (the report says when it caps).
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -gt 65536 ]; then hard=65536; fi
ulimit -n "$hard"

args=(run -agent "$bin/agent" -sidecar "$bin/sidecar" -goproxy "$bin/goproxy" -nginx "$NGINX" -out bench/out/last.md)
# The budgets are load's own deadline (suite.go) plus a margin: it stops
# its processes first.
budget=22m
if [ "${QUICK:-0}" = 1 ]; then
	args+=(-quick)
	budget=370s
fi
if [ "${KEEP:-0}" = 1 ]; then args+=(-keep); fi
if [ -n "$load_only" ]; then args+=(-only "$load_only"); fi
if [ -n "${BASELINE:-}" ]; then
	args+=(-baseline "$bin/sidecar-base" -baseline-name "$base_rev")
	budget=$([ "${QUICK:-0}" = 1 ] && echo 430s || echo 25m) # six variants, not five
fi
if [ "${VARIANT_NETHTTP:-0}" = 1 ]; then
	args+=(-nethttp "$bin/sidecar-nethttp")
	# one more variant: load's own deadline grows by a fifth, and so does this
	if [ -n "${BASELINE:-}" ]; then
		budget=$([ "${QUICK:-0}" = 1 ] && echo 490s || echo 28m)
	else
		budget=$([ "${QUICK:-0}" = 1 ] && echo 430s || echo 25m)
	fi
fi
# load stops its own processes on SIGTERM, and on its own deadline.
if [ -z "${ONLY:-}" ] || [ -n "$load_only" ]; then
	timeout -s TERM -k 30s "$budget" "$bin/load" "${args[@]}"
else
	: >bench/out/last.md
fi

if [ "$dialects" = 1 ]; then
	dargs=(dialects -test "$bin/dialect.test" -out bench/out/dialects.md)
	if [ "${QUICK:-0}" = 1 ]; then dargs+=(-rounds 3 -benchtime 50x); fi
	if [ -n "${BASELINE:-}" ]; then dargs+=(-base "$bin/dialect-base.test" -base-name "$base_rev"); fi
	{
		echo
		echo "Dialect rows: package dialect's BenchmarkDialect, a long answer's token stream (1,000 token records and the"
		echo "records around them) through the SSE deframer and the mapping stage, in one process; emit raw is the deframer"
		echo "alone. Median of the rounds; CPU is the process's (GC included)."
		echo
	} | tee -a bench/out/last.md
	timeout -s TERM -k 30s 20m "$bin/load" "${dargs[@]}" | tee -a bench/out/last.md
fi
