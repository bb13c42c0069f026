package emulator

import "embed"

// Playground holds the playground page's static files under "playground/":
// index.html, app.js and style.css. They use no CDN and no build step.
//
//go:embed playground
var Playground embed.FS
