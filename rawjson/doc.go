// Package rawjson reads JSON text in place, without decoding it: it
// compacts a value in one pass (AppendCompact) and walks the members of an
// object as slices of its text (Members, Key, KeyIs). Both sides of the
// sidecar use it: the front door on a caller's envelope and input, the
// upstream deframers on every record. AppendString writes a text as a JSON
// string, one writer for the emitted lines (dialect) and the records of a
// text reply (upstream), an invalid byte escaped or replaced as each
// needs. Snake gives a camelCase member name
// in snake_case (deploy's update masks, adk's renamed keys).
package rawjson
