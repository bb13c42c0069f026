// Command sbom writes the software bill of materials that `make release`
// publishes: a CycloneDX 1.5 JSON document naming the sidecar and every Go
// module linked into the release binaries, with its version, read from the
// build information the Go linker writes into each binary (what
// `go version -m` prints). It describes what was built, not what go.mod
// lists: a module only the tests use is not in it.
//
//	go run ./internal/sbom -version v1.2.3 -o dist/sidecar_v1.2.3.cdx.json dist/*/sidecar
//
// The output holds no timestamp unless SOURCE_DATE_EPOCH is set, so the
// same binaries give the same bytes.
package main
