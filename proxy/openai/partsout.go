package openai

import (
	"mime"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// An agent's parts that are not text (docs/parts.md) reach the caller
// as OpenAI's APIs can carry them. Chat Completions has no output for an
// image, a file or data beside the assistant's text: each part is text in
// the content, Markdown that chat front ends render (partText). The
// Responses API has an output item for an image, image_generation_call,
// whose result is the image's base64: an inline PNG, JPEG or WebP image
// is one (imageItem); any other part is text in the message, as in chat.

// readPart is the part record rec is, nil for a record that is no part
// or not a well-formed one (a stream the mapping stage passed through:
// the record is then text, as any other it cannot place). The stage
// checked and counted the parts against limits.parts already.
func readPart(rec []byte) *part.Part {
	if !part.Is(rec) {
		return nil
	}
	p, err := part.Parse(rec, config.Parts{})
	if err != nil {
		return nil
	}
	return p
}

// partText appends p as Markdown text, escaped as a JSON string's
// contents: an inline image ![name](data:<type>;base64,<data>), any other
// inline part [name](data:…) (name, else its type), a file's URI
// ![name](<uri>) for an image's, else [name](<uri>) (name, else the URI),
// and data its JSON. The base64 is the agent's, as it sent it.
func partText(dst []byte, p *part.Part) []byte {
	switch p.Kind {
	case part.Inline:
		mt, _, _ := mime.ParseMediaType(p.MIME)
		if strings.HasPrefix(mt, "image/") {
			dst = append(dst, '!')
		}
		dst = linkText(dst, p.Name, mt)
		dst = append(append(append(dst, "](data:"...), mt...), ";base64,"...)
		dst = append(dst, p.Base64...)
		return append(dst, ')')
	case part.File:
		mt, _, _ := mime.ParseMediaType(p.MIME)
		if strings.HasPrefix(mt, "image/") {
			dst = append(dst, '!')
		}
		dst = linkText(dst, p.Name, p.URI)
		dst = append(dst, "]("...)
		dst = rawjson.AppendContents(dst, linkURI(p.URI), rawjson.EscapeInvalid)
		return append(dst, ')')
	}
	return escape(dst, p.Value)
}

// linkText appends "[" and a link's text, name or else alt, its
// brackets and backslashes escaped for Markdown.
func linkText(dst []byte, name, alt string) []byte {
	if name == "" {
		name = alt
	}
	name = strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`).Replace(name)
	return rawjson.AppendContents(append(dst, '['), name, rawjson.EscapeInvalid)
}

// linkURI is uri as a Markdown link's destination: its parentheses and
// angle brackets percent-encoded, so that the link ends where it should.
func linkURI(uri string) string {
	return strings.NewReplacer("(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(uri)
}

// imageTypes are the images the Responses API answers as an
// image_generation_call item: the formats its image generation writes.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true}

// isImageItem reports whether p is an image_generation_call item of a
// Responses answer.
func isImageItem(p *part.Part) bool {
	mt, _, _ := mime.ParseMediaType(p.MIME)
	return p.Kind == part.Inline && imageTypes[strings.ToLower(mt)]
}

// imageItem appends the image_generation_call output item of p, an
// image (isImageItem), its id id: completed, the result p's base64.
func imageItem(dst []byte, id string, p *part.Part) []byte {
	dst = append(append(append(dst, `{"id":"`...), id...), `","type":"image_generation_call","status":"completed","result":"`...)
	return append(append(dst, p.Base64...), `"}`...)
}
