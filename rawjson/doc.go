// Package rawjson reads and writes JSON text in place, without decoding
// it: it compacts a value in one pass (AppendCompact), walks the members
// of an object as slices of its text (Members, Key, KeyIs), and writes a
// text as a JSON string (AppendString, AppendBytes: an invalid byte
// escaped or replaced as the caller needs). Both sides of the sidecar use
// it: the front door on a caller's envelope and input, the upstream
// deframers on every record and on a text reply's, the mapping stage on
// every line it emits. Snake gives a camelCase member name in snake_case
// (deploy's update masks, adk's renamed keys).
package rawjson
