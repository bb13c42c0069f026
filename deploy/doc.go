// Package deploy derives what deploying needs from a method map: the
// spec.classMethods list of the Agent Platform create request. It is a pure
// function of the config; the scripts and manifests beside it use it
// through `sidecar class-methods`.
package deploy
