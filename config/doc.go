// Package config owns the sidecar's YAML method map: its schema, defaults,
// strict decoding (unknown keys rejected, with line numbers) and validation
// that reports every problem at once.
package config
