// Package emulator is the dev listener of `sidecar dev`: the platform's
// REST routes in front of the sidecar's own contract routes, and the
// playground page (the embedded static files in playground/). The REST
// emulator's emulator.go carries the full package doc; when the two meet,
// this file goes.
package emulator
