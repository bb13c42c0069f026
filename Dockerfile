# syntax=docker/dockerfile:1
#
# The sidecar image: one static binary (/sidecar) on a base with no shell,
# running as a non-root user. Build it from the repository root:
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t sidecar .
#
# Each release pushes it, for linux/amd64 and linux/arm64, as
# ghcr.io/sidecar-dev/sidecar:<tag> and :latest (.github/workflows/release.yml).
# It holds the binary at /sidecar and is meant to be copied into an agent's
# image rather than run alone, to /sidecar as below or onto the PATH:
#
#   COPY --from=ghcr.io/sidecar-dev/sidecar:latest /sidecar /usr/local/bin/sidecar
#
#   # Python (or Node, or anything) agent image:
#   FROM python:3.12-slim
#   WORKDIR /app
#   COPY . .
#   COPY sidecar.yaml /etc/sidecar.yaml
#   COPY --from=sidecar /sidecar /sidecar      # or --from=ghcr.io/sidecar-dev/sidecar:TAG
#   USER 10001:10001
#   EXPOSE 8080
#   ENTRYPOINT ["/sidecar", "--config", "/etc/sidecar.yaml", "--"]
#   CMD ["python3", "agent.py"]                  # Node: CMD ["node", "dist/agent.js"]
#
# The sidecar is then PID 1: it serves the platform on $PORT (8080), starts
# the CMD as the agent with PORT set to the agent's own port, forwards
# signals, reaps orphans and drains on SIGTERM. deploy/examples/ has both
# patterns as complete Dockerfiles; `make image-check` proves what it can of
# this file without a Docker engine (deploy/image-check.sh).
#
# Build arguments:
#   GO_IMAGE    the builder; its Go must be at least go.mod's `go` line
#               (golang images set GOTOOLCHAIN=local: no toolchain download)
#   BASE_IMAGE  the final stage: distroless static (CA certificates, tzdata,
#               /etc/passwd with nonroot = 65532, no shell, no libc). The
#               binary needs nothing from it; `scratch` works too (then keep
#               the numeric USER below).
#   VERSION     stamped into the binary: `sidecar version` prints it
#   TARGETOS, TARGETARCH
#               set by BuildKit for --platform: Go cross-compiles on the
#               build machine, no emulation (docker buildx build
#               --platform linux/amd64,linux/arm64 .)

ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# No cgo: a static binary that runs on any base, scratch included.
ENV CGO_ENABLED=0
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o /out/sidecar ./cmd/sidecar

FROM ${BASE_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title="sidecar" \
      org.opencontainers.image.description="Agent Platform container contract in front of an agent in any language" \
      org.opencontainers.image.version="$VERSION"
COPY --from=build /out/sidecar /sidecar
# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/sidecar"]
