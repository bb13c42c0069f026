package mcp

import (
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/part"
)

// appendContent appends p, the n-th part of an answer (from 1), as a
// tools/call result's content (docs/mcp.md "Images, audio and files"):
//
//	inline image/*  {"type":"image","data":…,"mimeType":…}
//	inline audio/*  {"type":"audio","data":…,"mimeType":…}
//	other inline    {"type":"resource","resource":{"uri":"part:<n>[/<name>]","mimeType":…,"blob":…}}
//	file_data       {"type":"resource_link","uri":…,"name":…,"mimeType":…}
//	data            {"type":"text","text":<its JSON>}
//
// The base64 is the part's own, copied as it is: never decoded.
func appendContent(b []byte, p *part.Part, n int) []byte {
	switch p.Kind {
	case part.Inline:
		kind := mediaKind(p.MIME)
		if kind == "image" || kind == "audio" {
			b = append(b, `{"type":"`...)
			b = append(b, kind...)
			b = append(b, `","data":"`...)
			b = append(b, p.Base64...)
			b = append(b, `","mimeType":`...)
			b = appendString(b, p.MIME)
			return append(b, '}')
		}
		b = append(b, `{"type":"resource","resource":{"uri":`...)
		b = appendString(b, partURI(p, n))
		b = append(b, `,"mimeType":`...)
		b = appendString(b, p.MIME)
		b = append(b, `,"blob":"`...)
		b = append(b, p.Base64...)
		return append(b, `"}}`...)
	case part.File:
		b = append(b, `{"type":"resource_link","uri":`...)
		b = appendString(b, p.URI)
		b = append(b, `,"name":`...)
		b = appendString(b, linkName(p))
		if p.MIME != "" {
			b = append(b, `,"mimeType":`...)
			b = appendString(b, p.MIME)
		}
		return append(b, '}')
	default:
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, string(p.Value))
		return append(b, '}')
	}
}

// contentSize is about the bytes appendContent appends for p: its base64
// or value, and room for the rest.
func contentSize(p *part.Part) int {
	return len(p.Base64) + 2*len(p.Value) + len(p.URI) + 2*len(p.Name) + len(p.MIME) + 96
}

// mediaKind is the type of a media type ("image" of "image/png; q=1"),
// lower case.
func mediaKind(mimeType string) string {
	kind, _, _ := strings.Cut(mimeType, "/")
	return strings.ToLower(strings.TrimSpace(kind))
}

// partURI is an embedded resource's URI: part:<n>, the part's place in
// the answer, and its display name after a slash when it has one
// (part:2/report.pdf), escaped as a path segment.
func partURI(p *part.Part, n int) string {
	u := "part:" + strconv.Itoa(n)
	if p.Name != "" {
		u += "/" + url.PathEscape(p.Name)
	}
	return u
}

// linkName is a resource link's name: the part's display name, else the
// last segment of its URI's path, else the URI.
func linkName(p *part.Part) string {
	if p.Name != "" {
		return p.Name
	}
	if u, err := url.Parse(p.URI); err == nil {
		if base := path.Base(u.Path); base != "." && base != "/" && base != "" {
			return base
		}
	}
	return p.URI
}
