// Package docs holds the sidecar's documentation pages (one per topic,
// each a Markdown file here) and the tests that keep them true: every
// method map in them is run through `sidecar validate`, every command with
// an expected output is run against a real sidecar in front of
// examples/python/agent.py and its output compared, and every link between
// pages resolves. development.md says how an example is written so that
// the tests read it.
package docs
