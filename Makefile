# The two commands a user needs: `make run` and `make test`.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin/sidecar
FUZZTIME  ?= 30s

.PHONY: all build install release run deps test test-short bench bench-go fuzz lint clean image image-check

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sidecar

# `sidecar` on your PATH: the same static, stamped build as `make build`,
# installed by `go install` into $$(go env GOBIN), else $$(go env GOPATH)/bin.
install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/sidecar

# The release: for each of RELEASE_TARGETS, the same static, stamped build
# as `make build`, packed with README.md (and LICENSE, once there is one)
# into $(DIST)/sidecar_$(VERSION)_<os>_<arch>.tar.gz; a CycloneDX SBOM of
# the Go modules linked into those binaries, read from their build
# information (internal/sbom); and SHA256SUMS over the archives and the
# SBOM. The macOS builds are vetted for macOS first: supervise has code of
# its own there. `make release RELEASE_TARGETS=linux/amd64` builds one.
DIST            ?= dist
RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SHA256SUM       ?= $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo shasum -a 256)
release:
	rm -rf $(DIST)
	@set -e; for t in $(RELEASE_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; name=sidecar_$(VERSION)_$${os}_$${arch}; \
	  echo "release: $$name"; \
	  if [ "$$os" = darwin ]; then GOOS=$$os GOARCH=$$arch $(GO) vet ./supervise/ ./cmd/sidecar/; fi; \
	  mkdir -p $(DIST)/$$name; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/$$name/sidecar ./cmd/sidecar; \
	  files="sidecar README.md"; cp README.md $(DIST)/$$name/; \
	  if [ -f LICENSE ]; then cp LICENSE $(DIST)/$$name/; files="$$files LICENSE"; fi; \
	  tar -C $(DIST)/$$name -czf $(DIST)/$$name.tar.gz $$files; \
	done
	$(GO) run ./internal/sbom -version $(VERSION) -o $(DIST)/sidecar_$(VERSION).cdx.json $(DIST)/*/sidecar
	cd $(DIST) && $(SHA256SUM) *.tar.gz *.cdx.json > SHA256SUMS

# `sidecar dev`: the sidecar on :8080 (or $$PORT) in entrypoint mode (it
# starts the bundled example agent, Python standard library, on
# 127.0.0.1:8000 and supervises it), plus the platform's REST API and the
# playground page on http://127.0.0.1:8081. Ctrl-C drains and stops all.
# DEV_LISTEN moves the dev listener (loopback only).
DEV_LISTEN ?= 127.0.0.1:8081
run: build
	cd examples/python && exec ../../$(BIN) dev --config sidecar.yaml --dev-listen $(DEV_LISTEN) -- python3 agent.py

# What the tests need, installed before any test starts (no test installs:
# one that finds its packages missing fails at once, naming `make deps`):
# python3, node, npm, chromium, curl (the docs' examples) and redis-server
# (the state store's tests, a Redis on a free loopback port), and the
# Python modules of docs/quickstart-python.md's FastAPI agent (DEPS_PYTHON,
# Debian's packages: present when python3 or Debian's own /usr/bin/python3,
# which the tests fall back to, imports them) (from apt-get when one is
# missing and we are root, else a message naming them), then every
# testdata/*/install.sh, whose npm package sets (and actionlint, for the
# workflows' test) go into $${SIDECAR_CACHE:-.cache} (a no-op while the
# cache is current; a cold one takes a few minutes).
DEPS_TOOLS := python3:python3 node:nodejs npm:npm chromium:chromium curl:curl redis-server:redis-server
DEPS_PYTHON := fastapi:python3-fastapi uvicorn:python3-uvicorn
deps:
	@missing=; for t in $(DEPS_TOOLS); do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; \
	done; \
	for m in $(DEPS_PYTHON); do \
	  python3 -c "import $${m%%:*}" >/dev/null 2>&1 || /usr/bin/python3 -c "import $${m%%:*}" >/dev/null 2>&1 \
	    || missing="$$missing $${m#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "deps: apt-get install$$missing"; \
	    apt-get update -q && apt-get install -y -q $$missing || exit 1; \
	  else \
	    echo "deps: missing:$$missing. Install (as root: apt-get install -y$$missing), then run make deps again" >&2; \
	    exit 1; \
	  fi; \
	fi
	@for s in testdata/*/install.sh; do \
	  echo "deps: $$s"; bash $$s >/dev/null || exit 1; \
	done

# The whole suite, under the race detector, after `make deps`.
test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

# The quick tests: -short skips those that need `make deps`.
test-short:
	$(GO) test -count=1 -short ./...

# The side-by-side benchmark (direct, nginx, the Go net/http floor, the
# sidecar) that BENCHMARKS.md reports. QUICK=1: a short run. BASELINE=<git
# rev>: before and after in one run, that revision's sidecar as one more
# column (sidecar@<rev>) and a sidecar / baseline ratio. VARIANT_NETHTTP=1:
# the sidecar built with -tags nethttp (net/http's Transport to the agent)
# as one more column (sidecar-nethttp) and a sidecar-nethttp / sidecar ratio.
# The dialect rows (records/s, CPU and allocations per record, per dialect
# and emit mode) follow the main table; ONLY=dialects runs them alone.
bench:
	GO=$(GO) QUICK=$(QUICK) BASELINE=$(BASELINE) VARIANT_NETHTTP=$(VARIANT_NETHTTP) bench/run.sh

# The Go micro-benchmarks (deframers and friends).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Run every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The sidecar image (needs a Docker engine).
image:
	docker build --build-arg VERSION=$(VERSION) -t sidecar:$(VERSION) -t sidecar:latest .

# What can be proved of the image without a Docker engine: the Dockerfile's
# build stage run locally, a static stripped binary that runs, a non-root
# final stage, the example images' ENTRYPOINT+CMD run against real agents.
image-check:
	VERSION=$(VERSION) deploy/image-check.sh

clean:
	rm -rf bin $(DIST)
