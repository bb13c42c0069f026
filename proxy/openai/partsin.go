package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// contentPart is a content part of a message as the door reads it, in
// either API: Chat Completions' text, image_url ({"url"}), input_audio
// ({"data", "format"}) and file ({"file_data", "file_id", "filename"});
// Responses' input_text, input_image ("image_url" a string, or
// "file_id"), input_file ("file_data", "file_url", "file_id",
// "filename") and input_audio.
type contentPart struct {
	Type string `json:"type"`
	// ImageURL is chat's {"url": …} or Responses' string.
	ImageURL   json.RawMessage `json:"image_url"`
	InputAudio *struct {
		Data   *string `json:"data"`
		Format string  `json:"format"`
	} `json:"input_audio"`
	File *fileRef `json:"file"`
	fileRef
	FileURL *string `json:"file_url"`
}

// fileRef is a file as chat's file part and Responses' input_file give
// it: its bytes (a data URL, or bare base64), or the id of a file
// uploaded to OpenAI's files API.
type fileRef struct {
	FileData *string `json:"file_data"`
	FileID   *string `json:"file_id"`
	Filename string  `json:"filename"`
}

// partsOf reads the content parts that are not text of content, the
// last user message's (item i of param), as the agent's input's parts: a
// JSON array of part records (docs/parts.md), nil when it has none. A
// part the door cannot carry, malformed, or over limits.parts is refused
// (400 naming the part's parameter; 413 for size) before the call starts.
// Text parts and types it does not know are left to the text.
func partsOf(content json.RawMessage, param string, i int, lim config.Parts) ([]byte, *core.Answer) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		return nil, nil
	}
	var list []contentPart
	if json.Unmarshal(c, &list) != nil {
		return nil, nil // contentText refused it
	}
	budget := part.NewBudget(lim)
	var out []byte
	for j := range list {
		at := fmt.Sprintf("%s[%d].content[%d]", param, i, j)
		p, where, err := list[j].part(lim)
		if err == nil && p != nil {
			err = budget.Take(p)
		}
		if err != nil {
			return nil, partRefusal(at+where, err)
		}
		if p == nil {
			continue
		}
		if out == nil {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = part.AppendRecord(out, p)
	}
	if out != nil {
		out = append(out, ']')
	}
	return out, nil
}

// errFileID refuses a file given by id: the door has no files API.
var errFileID = errors.New("file_id is not supported: the sidecar has no files API to look it up; send the file's bytes as file_data (a data URL, data:<type>;base64,…) or its URL")

// part is the part cp is, nil for a text part or a type the door does
// not read, and where (the member under the part) an error is.
func (cp *contentPart) part(lim config.Parts) (p *part.Part, where string, err error) {
	switch cp.Type {
	case "image_url": // chat: {"url": "data:…" | "https://…", "detail"}
		var img struct {
			URL *string `json:"url"`
		}
		if json.Unmarshal(cp.ImageURL, &img) != nil || img.URL == nil {
			return nil, ".image_url", errors.New(`image_url must be {"url": <a data URL or an https URL>}`)
		}
		p, err = image(*img.URL, lim)
		return p, ".image_url.url", err
	case "input_image": // responses: "image_url": "data:…" | "https://…", or "file_id"
		var u *string
		if len(cp.ImageURL) > 0 && json.Unmarshal(cp.ImageURL, &u) != nil {
			return nil, ".image_url", errors.New("image_url must be a string: a data URL or an https URL")
		}
		if u == nil {
			if cp.FileID != nil {
				return nil, ".file_id", errFileID
			}
			return nil, ".image_url", errors.New("input_image needs image_url (a data URL or an https URL)")
		}
		p, err = image(*u, lim)
		return p, ".image_url", err
	case "input_audio": // both: {"data": <base64>, "format": "wav" | "mp3"}
		a := cp.InputAudio
		if a == nil || a.Data == nil {
			return nil, ".input_audio", errors.New(`input_audio must be {"data": <base64>, "format": "wav" or "mp3"}`)
		}
		t, ok := audioTypes[a.Format]
		if !ok {
			return nil, ".input_audio.format", fmt.Errorf("input_audio.format is wav or mp3, not %q", core.Clip(a.Format))
		}
		p, err = part.NewInline(t, "", []byte(*a.Data), lim)
		return p, ".input_audio.data", err
	case "file": // chat: {"file": {"file_data" | "file_id", "filename"}}
		if cp.File == nil {
			return nil, ".file", errors.New(`file must be {"file_data": <a data URL>, "filename": …}`)
		}
		p, where, err = cp.File.part(nil, lim)
		return p, ".file" + where, err
	case "input_file": // responses: "file_data" | "file_url" | "file_id", "filename"
		return cp.fileRef.part(cp.FileURL, lim)
	}
	return nil, "", nil
}

// audioTypes are input_audio's formats' media types.
var audioTypes = map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg"}

// image is the part of an image's URL: the bytes of a data URL, inline;
// any other absolute URL a file part, passed on and never fetched, its
// type the URL's extension's when that names one.
func image(u string, lim config.Parts) (*part.Part, error) {
	if p, ok, err := part.FromDataURL(u, "", lim); ok {
		return p, err
	}
	return part.NewFile(typeOfPath(u), "", u)
}

// part is the part of a file: file_data's bytes (a data URL, or bare
// base64 whose type is the file name's extension's, else
// application/octet-stream), else fileURL passed on; file_id refused.
func (f *fileRef) part(fileURL *string, lim config.Parts) (*part.Part, string, error) {
	switch {
	case f.FileData != nil:
		if p, ok, err := part.FromDataURL(*f.FileData, f.Filename, lim); ok {
			return p, ".file_data", err
		}
		t := mime.TypeByExtension(path.Ext(f.Filename))
		if t == "" {
			t = "application/octet-stream"
		}
		p, err := part.NewInline(t, f.Filename, []byte(*f.FileData), lim)
		return p, ".file_data", err
	case fileURL != nil:
		p, err := part.NewFile(typeOfPath(*fileURL), f.Filename, *fileURL)
		return p, ".file_url", err
	case f.FileID != nil:
		return nil, ".file_id", errFileID
	}
	return nil, "", errors.New("a file needs file_data (a data URL) or, in the Responses API, file_url")
}

// typeOfPath is the media type a URL's path's extension names, "" for
// none known.
func typeOfPath(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return ""
	}
	t := mime.TypeByExtension(path.Ext(parsed.Path))
	if t != "" && part.CheckMIME(t) != nil {
		return ""
	}
	return t
}

// partRefusal is the refusal of a caller's part at param: 413 for one
// over limits.parts, else 400, saying why.
func partRefusal(param string, err error) *core.Answer {
	var pe *part.Error
	if errors.As(err, &pe) && pe.TooLarge {
		return refusal(http.StatusRequestEntityTooLarge, param, "part_too_large", param+": "+pe.Msg)
	}
	code := "invalid_value"
	if errors.Is(err, errFileID) {
		code = "unsupported_value"
	}
	return refusal(http.StatusBadRequest, param, code, param+": "+strings.TrimSpace(err.Error()))
}
