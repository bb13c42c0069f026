// Package deploy derives what deploying needs from a method map: the
// spec.classMethods list and the whole Agent Platform create request that
// `sidecar deploy-request` prints, as pure functions of the config. The
// scripts (deploy/agent-platform), manifests (deploy/cloud-run,
// deploy/kubernetes) and the image check beside it use them.
package deploy
