package a2a

import (
	"encoding/json"
	"fmt"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	gpart "github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// Parts that are not text, both ways (docs/parts.md): an agent's part
// records (package part's one shape) become the artifact's file and data
// parts; a caller's file and data parts reach the agent in its input's
// parts, in that shape.

// fileOf is the artifact part of an agent's part record, read by part.Parse:
// a data part its value; a file part its media type, name and URI, or
// its bytes' base64, copied once into blocks (the record's buffer is the
// reader's) and written as they came, never decoded.
func fileOf(p *gpart.Part) part {
	switch p.Kind {
	case gpart.Data:
		return part{Data: p.Value}
	case gpart.Inline:
		raw := &frames.Text{}
		raw.Append(p.Base64)
		return part{file: &gpart.Part{Kind: p.Kind, MIME: p.MIME, Name: p.Name, Size: p.Size}, raw: raw}
	}
	return part{file: p}
}

// size is what p counts against the store's bounds: its bytes.
func (p part) size() int64 {
	n := int64(len(p.Text) + len(p.Data) + len(p.Metadata))
	if p.file != nil {
		n += int64(len(p.file.MIME) + len(p.file.Name) + len(p.file.URI))
	}
	if p.raw != nil {
		n += p.raw.Len()
	}
	return n
}

// rawTexts are the base64 of ps's bytes, in order: what writeText writes
// in place of their marks (filePart).
func rawTexts(ps ...part) []*frames.Text {
	var texts []*frames.Text
	for _, p := range ps {
		if p.raw != nil {
			texts = append(texts, p.raw)
		}
	}
	return texts
}

// filePart is a file part in v's shape: 1.0's Part with raw or url,
// mediaType and filename; 0.3's FilePart {"kind": "file", "file":
// {"bytes" | "uri", "mimeType", "name"}}; 0.3's HTTP+JSON {"file":
// {"fileWithBytes" | "fileWithUri", "mimeType", "name"}}. Bytes are
// textMark, the base64 written in its place (writeText).
func (v version) filePart(p part) any {
	f := p.file
	var bytes string
	if p.raw != nil {
		bytes = textMark
	}
	switch v {
	case v03:
		type file struct {
			Bytes    string `json:"bytes,omitempty"`
			URI      string `json:"uri,omitempty"`
			MimeType string `json:"mimeType,omitempty"`
			Name     string `json:"name,omitempty"`
		}
		return struct {
			Kind string `json:"kind"`
			File file   `json:"file"`
		}{"file", file{bytes, f.URI, f.MIME, f.Name}}
	case p03:
		type file struct {
			Bytes    string `json:"fileWithBytes,omitempty"`
			URI      string `json:"fileWithUri,omitempty"`
			MimeType string `json:"mimeType,omitempty"`
			Name     string `json:"name,omitempty"`
		}
		return struct {
			File file `json:"file"`
		}{file{bytes, f.URI, f.MIME, f.Name}}
	}
	return struct {
		Raw       string `json:"raw,omitempty"`
		URL       string `json:"url,omitempty"`
		MediaType string `json:"mediaType,omitempty"`
		Filename  string `json:"filename,omitempty"`
	}{bytes, f.URI, f.MIME, f.Name}
}

// objectData is a data part's value as 0.3 holds it, an object: a value
// that is not one is wrapped, {"data": value}.
func objectData(d json.RawMessage) json.RawMessage {
	if len(d) > 0 && d[0] == '{' {
		return d
	}
	return append(append([]byte(`{"data":`), d...), '}')
}

// callerPart reads raw, a part of a caller's message that is not text,
// in any version's shape: 1.0's {"raw" | "url", "mediaType", "filename"}
// and {"data", "mediaType"}, 0.3's {"kind": "file", "file": {"bytes" |
// "uri", "mimeType", "name"}} and {"kind": "data", "data"}, 0.3's
// HTTP+JSON {"file": {"fileWithBytes" | "fileWithUri", …}} and {"data":
// {"data"}} (v p03). ok is false for a part it does not read (a text
// part, an unknown kind). A url that is a data URL is the bytes it
// carries. The base64 is the caller's own, checked, not decoded (package
// part).
func callerPart(raw []byte, v version, lim config.Parts) (p *gpart.Part, ok bool, err error) {
	var data, file, bytes, uri, mimeType, name []byte
	rawjson.Members(raw, func(key, value []byte) bool {
		switch rawjson.Key(key) {
		case "data":
			data = value
		case "file":
			file = value
		case "raw":
			bytes = value
		case "url":
			uri = value
		case "mediaType":
			mimeType = value
		case "filename":
			name = value
		}
		return true
	})
	if file != nil {
		if len(file) == 0 || file[0] != '{' {
			return nil, true, fmt.Errorf("a file part's file is an object")
		}
		rawjson.Members(file, func(key, value []byte) bool {
			switch rawjson.Key(key) {
			case "bytes", "fileWithBytes", "file_with_bytes":
				bytes = value
			case "uri", "fileWithUri", "file_with_uri":
				uri = value
			case "mimeType", "mime_type":
				mimeType = value
			case "name":
				name = value
			}
			return true
		})
	}
	switch {
	case bytes != nil:
		if len(bytes) < 2 || bytes[0] != '"' || bytes[len(bytes)-1] != '"' {
			return nil, true, fmt.Errorf("a file part's bytes are a base64 string")
		}
		mt, nm, err := fileNames(mimeType, name)
		if err != nil {
			return nil, true, err
		}
		p, err := gpart.NewInline(mt, nm, bytes[1:len(bytes)-1], lim)
		return p, true, err
	case uri != nil:
		var u string
		if json.Unmarshal(uri, &u) != nil {
			return nil, true, fmt.Errorf("a file part's uri is a string")
		}
		mt, nm, err := fileNames(mimeType, name)
		if err != nil {
			return nil, true, err
		}
		if p, isData, err := gpart.FromDataURL(u, nm, lim); isData {
			if err == nil && mt != "" && mt != p.MIME {
				err = fmt.Errorf("the data URL's type %q is not the part's %q", p.MIME, mt)
			}
			return p, true, err
		}
		p, err := gpart.NewFile(mt, nm, u)
		return p, true, err
	case data != nil && file == nil:
		if v == p03 {
			data = memberOf(data, "data")
		}
		value, valid := rawjson.AppendCompact(nil, data)
		if !valid || len(value) == 0 {
			return nil, true, fmt.Errorf("a data part's data is not JSON")
		}
		return &gpart.Part{Kind: gpart.Data, Value: value}, true, nil
	}
	return nil, false, nil
}

// fileNames reads a file part's media type and name, JSON strings or
// absent.
func fileNames(mimeType, name []byte) (string, string, error) {
	var mt, nm string
	if mimeType != nil && json.Unmarshal(mimeType, &mt) != nil {
		return "", "", fmt.Errorf("a file part's media type is a string")
	}
	if name != nil && json.Unmarshal(name, &nm) != nil {
		return "", "", fmt.Errorf("a file part's name is a string")
	}
	return mt, nm, nil
}
