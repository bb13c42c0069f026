# The two commands a user needs: `make run` and `make test`.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin/sidecar
FUZZTIME  ?= 30s
AGENT_PORT ?= 8000

.PHONY: all build run test test-short bench fuzz lint clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sidecar

# Start the bundled example agent (Python, standard library) and the sidecar
# in front of it on :8080 (or $$PORT). Ctrl-C stops both.
run: build
	@echo "example agent on 127.0.0.1:$(AGENT_PORT), sidecar on :$${PORT:-8080}"
	@PORT=$(AGENT_PORT) python3 examples/python/agent.py & agent=$$!; \
	trap 'kill $$agent 2>/dev/null' EXIT INT TERM; \
	$(BIN) --config examples/python/sidecar.yaml

# The whole suite, under the race detector.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

test-short:
	$(GO) test -count=1 -short ./...

bench:
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

clean:
	rm -rf bin
