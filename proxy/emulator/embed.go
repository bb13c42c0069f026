package emulator

import "embed"

// playground holds the playground page's static files under "playground/"
// (index.html, app.js, transcript.js, style.css: no CDN, no build step).
// The REST emulator (emulator.go) declares this same embed line; when the
// two meet, this file goes.
//
//go:embed playground
var playground embed.FS
