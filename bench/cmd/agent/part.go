package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// The parts rows (issue 41): POST /part answers one SSE event holding one
// record, an image of partSize bytes as an inline part,
//
//	data: {"inline_data":{"mime_type":"image/png","data":"<base64>"}}
//
// or, when the input's message says "as text", the same base64 as a text
// record, {"text":"<base64>"}. The image is a PNG's signature and header
// followed by bytes of a fixed pseudo-random sequence, so that the
// sidecar's check of the bytes against image/png passes; it is made once.

// partSize is the image's size: 5 MiB.
const partSize = 5 << 20

var (
	partOnce sync.Once
	partB64  []byte
)

// partBase64 is the image's base64, made on first use.
func partBase64() []byte {
	partOnce.Do(func() {
		img := make([]byte, partSize)
		n := copy(img, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
		x := uint32(2463534242)
		for i := n; i < len(img); i++ {
			x ^= x << 13 // xorshift32
			x ^= x >> 17
			x ^= x << 5
			img[i] = byte(x)
		}
		partB64 = base64.StdEncoding.AppendEncode(nil, img)
	})
	return partB64
}

// part answers the image, or its base64 as text, as one SSE event.
func part(w http.ResponseWriter, r *http.Request) {
	in, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	b64 := partBase64()
	var b []byte
	if bytes.Contains(in, []byte("as text")) {
		b = make([]byte, 0, len(b64)+32)
		b = append(b, `data: {"text":"`...)
		b = append(b, b64...)
		b = append(b, "\"}\n\n"...)
	} else {
		b = make([]byte, 0, len(b64)+80)
		b = append(b, `data: {"inline_data":{"mime_type":"image/png","data":"`...)
		b = append(b, b64...)
		b = append(b, "\"}}\n\n"...)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}
