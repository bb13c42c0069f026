// Package part is the one shape of a part of a call that is not text,
// whatever the door: an image, a clip of audio, a file, structured data
// (docs/parts.md). It is Google's Part, as the contract's callers know it:
//
//	{"inline_data": {"mime_type": "image/png", "data": "<base64>", "display_name": "chart.png"}}
//	{"file_data": {"mime_type": "application/pdf", "file_uri": "https://…", "display_name": "report.pdf"}}
//	{"data": {…any JSON…}}
//
// An agent emits one as a record of its reply; a door carries it to the
// caller in its protocol's own way (MCP image, audio and resource content,
// A2A file and data parts, OpenAI's image output). A caller's parts reach
// the agent in the same shape, in the input's parts member beside the
// message text. The camelCase spelling of Google's REST API (inlineData,
// mimeType, fileData, fileUri, displayName) is read too; the package
// writes snake_case.
//
// Nothing here fetches a URI: a file_data part's URI is passed on as it
// is, so the sidecar opens no connection a caller or an agent names.
package part

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The kinds of part.
const (
	// Inline is bytes carried in the part, base64 (inline_data).
	Inline = "inline"
	// File is a file named by URI (file_data), never fetched here.
	File = "file"
	// Data is structured data, any JSON value (data).
	Data = "data"
)

// Part is one part that is not text.
type Part struct {
	// Kind is Inline, File or Data.
	Kind string
	// MIME is the media type (inline and file; "" for a file that gave
	// none), as the agent or caller wrote it, checked well formed.
	MIME string
	// Name is the display name, a file name for a person ("" for none).
	Name string
	// Base64 is an inline part's bytes, standard base64 with padding,
	// as sent when it was sent so (a slice of the record, not a copy);
	// else the one copy that normalizes it.
	Base64 []byte
	// Size is an inline part's decoded size in bytes.
	Size int64
	// URI is a file part's URI.
	URI string
	// Value is a data part's JSON value, compact.
	Value json.RawMessage
}

// Error is a part that is not one well-formed part, or too large. A door
// says Msg to its caller in its protocol's shape (Agent turns it into the
// agent's error).
type Error struct {
	Msg string
	// TooLarge: the part is over limits.parts (413 on a caller's
	// request, PART_TOO_LARGE on an agent's reply).
	TooLarge bool
}

func (e *Error) Error() string { return e.Msg }

// Agent is err, from reading a part of an agent's reply, as the call's
// error: PART_TOO_LARGE for a part over the caps, BAD_REPLY for a
// malformed one.
func Agent(err error) error {
	var pe *Error
	if !errors.As(err, &pe) {
		return err
	}
	if pe.TooLarge {
		return fmt.Errorf("%w: %s", core.ErrPartTooLarge, pe.Msg)
	}
	return &core.ReplyError{Msg: "part: " + pe.Msg}
}

func bad(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// prefixes are how a part record begins, compact.
var prefixes = [][]byte{
	[]byte(`{"inline_data":`), []byte(`{"inlineData":`),
	[]byte(`{"file_data":`), []byte(`{"fileData":`),
}

// Is reports whether rec, one compact record, is a part record: an
// object whose first member is inline_data or file_data (or their
// camelCase), or whose one member is data. It reads a few bytes of any
// other record: a door calls it on every record. A record that begins
// with data and has other members is not a part (an agent's own record).
func Is(rec []byte) bool {
	if len(rec) < 8 || rec[0] != '{' {
		return false
	}
	for _, p := range prefixes {
		if bytes.HasPrefix(rec, p) {
			return true
		}
	}
	if !bytes.HasPrefix(rec, []byte(`{"data":`)) {
		return false
	}
	n := 0
	return rawjson.Members(rec, func(_, _ []byte) bool { n++; return n == 1 })
}

// Parse reads rec, one part as a JSON object (a record for which Is
// holds, or an element of an input's parts), checking it against lim's
// cap on one part. A part that is not well formed, or is too large, is an
// *Error saying why. An inline part's bytes are checked as base64 and
// against the media type it names, never decoded whole.
func Parse(rec []byte, lim config.Parts) (*Part, error) {
	var key string
	var body []byte
	members := 0
	ok := rawjson.Members(rec, func(k, v []byte) bool {
		members++
		key, body = rawjson.Key(k), v
		return true
	})
	if !ok {
		return nil, bad("a part is a JSON object")
	}
	if members != 1 {
		return nil, bad("a part has one member, inline_data, file_data or data; this one has %d", members)
	}
	switch key {
	case "inline_data", "inlineData":
		return parseInline(body, lim)
	case "file_data", "fileData":
		return parseFile(body)
	case "data":
		v, ok := rawjson.AppendCompact(nil, body)
		if !ok {
			return nil, bad("data is not JSON")
		}
		return &Part{Kind: Data, Value: v}, nil
	}
	return nil, bad("a part's member is inline_data, file_data or data, not %q", key)
}

// fields reads the members of an inline_data or file_data object:
// strings each, under either spelling; want names the ones allowed.
func fields(body []byte, what string) (map[string][]byte, error) {
	got := map[string][]byte{}
	ok := rawjson.Members(body, func(k, v []byte) bool {
		name := rawjson.Snake(rawjson.Key(k))
		got[name] = v
		return true
	})
	if !ok {
		return nil, bad("%s is not a JSON object", what)
	}
	return got, nil
}

func str(raw []byte, name string) (string, error) {
	if raw == nil {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", bad("%s is not a string", name)
	}
	return s, nil
}

func parseInline(body []byte, lim config.Parts) (*Part, error) {
	f, err := fields(body, "inline_data")
	if err != nil {
		return nil, err
	}
	p := &Part{Kind: Inline}
	for name := range f {
		switch name {
		case "mime_type", "data", "display_name":
		default:
			return nil, bad("inline_data has mime_type, data and display_name, not %q", name)
		}
	}
	if p.MIME, err = str(f["mime_type"], "inline_data.mime_type"); err != nil {
		return nil, err
	}
	if err := CheckMIME(p.MIME); err != nil {
		return nil, err
	}
	if p.Name, err = str(f["display_name"], "inline_data.display_name"); err != nil {
		return nil, err
	}
	if err := checkName(p.Name); err != nil {
		return nil, err
	}
	raw := f["data"]
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, bad("inline_data.data is missing, or not a base64 string")
	}
	if err := p.setBase64(raw[1:len(raw)-1], true, lim); err != nil {
		return nil, err
	}
	return p, nil
}

func parseFile(body []byte) (*Part, error) {
	f, err := fields(body, "file_data")
	if err != nil {
		return nil, err
	}
	p := &Part{Kind: File}
	for name := range f {
		switch name {
		case "mime_type", "file_uri", "display_name":
		default:
			return nil, bad("file_data has mime_type, file_uri and display_name, not %q", name)
		}
	}
	if p.MIME, err = str(f["mime_type"], "file_data.mime_type"); err != nil {
		return nil, err
	}
	if p.MIME != "" {
		if err := CheckMIME(p.MIME); err != nil {
			return nil, err
		}
	}
	if p.Name, err = str(f["display_name"], "file_data.display_name"); err != nil {
		return nil, err
	}
	if err := checkName(p.Name); err != nil {
		return nil, err
	}
	if p.URI, err = str(f["file_uri"], "file_data.file_uri"); err != nil {
		return nil, err
	}
	if err := CheckURI(p.URI); err != nil {
		return nil, err
	}
	return p, nil
}

// NewInline is an inline part of b64, base64 text as a caller or agent
// sent it (standard or URL-safe alphabet, padded or not; a JSON string's
// contents, escapes allowed), checked against lim's cap on one part and
// against mimeType.
func NewInline(mimeType, name string, b64 []byte, lim config.Parts) (*Part, error) {
	if err := CheckMIME(mimeType); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := &Part{Kind: Inline, MIME: mimeType, Name: name}
	if err := p.setBase64(b64, true, lim); err != nil {
		return nil, err
	}
	return p, nil
}

// NewFile is a file part of uri, checked (never fetched).
func NewFile(mimeType, name, uri string) (*Part, error) {
	if mimeType != "" {
		if err := CheckMIME(mimeType); err != nil {
			return nil, err
		}
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := CheckURI(uri); err != nil {
		return nil, err
	}
	return &Part{Kind: File, MIME: mimeType, Name: name, URI: uri}, nil
}

// FromDataURL is the inline part a data URL carries
// (data:<type>;base64,<data>, RFC 2397), as OpenAI's image_url and the
// Vercel AI SDK's file parts send one; ok is false for any other URL. A
// data URL that is not base64 is refused: its bytes would need
// re-encoding.
func FromDataURL(u, name string, lim config.Parts) (p *Part, ok bool, err error) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		if len(u) >= 5 && strings.EqualFold(u[:5], "data:") {
			rest = u[5:]
		} else {
			return nil, false, nil
		}
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return nil, true, bad("a data URL has a comma before its data")
	}
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 {
		return nil, true, bad("a data URL's data must be base64 (data:<type>;base64,…)")
	}
	if mediaType == "" {
		mediaType = "text/plain"
	}
	p, err = NewInline(mediaType, name, []byte(data), lim)
	return p, true, err
}

// CheckMIME checks a media type: type/subtype with optional parameters,
// no control characters (a CR or LF would split a header it reaches).
func CheckMIME(t string) error {
	if t == "" {
		return bad("mime_type is missing: say what the bytes are (image/png, audio/wav, application/pdf, …)")
	}
	if len(t) > 255 {
		return bad("mime_type is %d bytes, more than 255", len(t))
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c < 0x20 || c == 0x7f {
			return bad("mime_type %q has a control character", t)
		}
	}
	mt, _, err := mime.ParseMediaType(t)
	if err != nil || !strings.Contains(mt, "/") {
		return bad("mime_type %q is not a media type (type/subtype)", t)
	}
	return nil
}

// CheckURI checks a file part's URI: absolute, with a scheme and no
// control characters or spaces. It is passed on, never fetched.
func CheckURI(uri string) error {
	if uri == "" {
		return bad("file_uri is missing")
	}
	if len(uri) > 8<<10 {
		return bad("file_uri is %d bytes, more than 8 KiB", len(uri))
	}
	for i := 0; i < len(uri); i++ {
		if c := uri[i]; c <= 0x20 || c == 0x7f {
			return bad("file_uri has a control character or a space")
		}
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return bad("file_uri %q is not an absolute URI", clip(uri))
	}
	if strings.EqualFold(u.Scheme, "data") {
		return bad("file_uri is a data URL: send the bytes as inline_data")
	}
	return nil
}

func checkName(name string) error {
	if len(name) > 1024 {
		return bad("display_name is %d bytes, more than 1 KiB", len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return bad("display_name has a control character")
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// setBase64 checks s, base64 text (a JSON string's contents when escaped
// may hold escapes), and sets p.Base64 and p.Size: s itself when it is
// standard base64 with padding, else one normalized copy. The size is
// checked against lim.Bytes before any copy is made.
func (p *Part) setBase64(s []byte, escaped bool, lim config.Parts) error {
	// The size first, from the length alone: a 200 MB string is refused
	// before anything of it is copied.
	if est := int64(len(s)) / 4 * 3; lim.Bytes > 0 && est > lim.Bytes+3 {
		return &Error{TooLarge: true, Msg: fmt.Sprintf("a part of about %d bytes is more than limits.parts.bytes (%d)", est, lim.Bytes)}
	}
	clean := true
	for _, c := range s {
		if !isStd(c) {
			clean = false
			break
		}
	}
	if !clean || len(s)%4 != 0 {
		n, err := normalize(s, escaped)
		if err != nil {
			return err
		}
		s = n
	}
	if len(s) == 0 {
		return bad("inline data is empty")
	}
	pad := 0
	if len(s) > 0 && s[len(s)-1] == '=' {
		pad++
		if s[len(s)-2] == '=' {
			pad++
		}
	}
	for i, c := range s[:len(s)-pad] {
		if c == '=' {
			return bad("inline data is not base64: padding at %d", i)
		}
	}
	p.Base64 = s
	p.Size = int64(len(s)/4*3 - pad)
	if lim.Bytes > 0 && p.Size > lim.Bytes {
		return &Error{TooLarge: true, Msg: fmt.Sprintf("a part of %d bytes is more than limits.parts.bytes (%d)", p.Size, lim.Bytes)}
	}
	// The last group's unused bits must be zero, as a strict decoder
	// wants; and the first bytes must be what mime_type says.
	head := s
	if len(head) > 688 { // 516 bytes: enough to sniff, and a whole number of groups
		head = head[:688]
	}
	if len(s) > 688 {
		if _, err := base64.StdEncoding.Strict().DecodeString(string(s[len(s)-4:])); err != nil {
			return bad("inline data is not base64: %v", err)
		}
	}
	dec, err := base64.StdEncoding.Strict().DecodeString(string(head))
	if err != nil {
		return bad("inline data is not base64: %v", err)
	}
	return checkSniff(p.MIME, dec)
}

func isStd(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// normalize is s as standard padded base64: JSON escapes resolved (a
// \/ is a /), line breaks dropped (base64 wrapped at 76, or joined from
// an SSE event's data lines), the URL-safe alphabet turned standard,
// padding added. Anything else is not base64.
func normalize(s []byte, escaped bool) ([]byte, error) {
	out := make([]byte, 0, len(s)+3)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if escaped && c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case '/':
				c = '/'
			case 'n', 'r':
				continue
			case 'u':
				var v [1]byte
				if i+4 < len(s) && string(s[i+1:i+3]) == "00" {
					if _, err := hex.Decode(v[:], s[i+3:i+5]); err == nil {
						i += 4
						if v[0] == '\n' || v[0] == '\r' {
							continue
						}
						c = v[0]
						break
					}
				}
				return nil, bad("inline data is not base64: an escape at %d", i-1)
			default:
				return nil, bad("inline data is not base64: an escape at %d", i-1)
			}
		}
		switch {
		case c == '\n' || c == '\r':
			continue
		case c == '-':
			c = '+'
		case c == '_':
			c = '/'
		case !isStd(c):
			return nil, bad("inline data is not base64: %q at %d", c, i)
		}
		out = append(out, c)
	}
	for len(out)%4 != 0 {
		if len(out)%4 == 1 {
			return nil, bad("inline data is not base64: %d characters cannot end a group", len(out))
		}
		out = append(out, '=')
	}
	return out, nil
}

// The media types the first bytes can tell apart for certain, by the
// name http.DetectContentType gives and their usual aliases.
var sniffable = map[string]string{
	"image/png": "image/png", "image/apng": "image/png",
	"image/jpeg": "image/jpeg", "image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg",
	"image/gif":  "image/gif",
	"image/webp": "image/webp",
	"image/bmp":  "image/bmp", "image/x-ms-bmp": "image/bmp",
	"application/pdf": "application/pdf",
	"audio/wave":      "audio/wav", "audio/wav": "audio/wav", "audio/x-wav": "audio/wav", "audio/vnd.wave": "audio/wav",
	"audio/mpeg": "audio/mpeg", "audio/mp3": "audio/mpeg",
	"application/zip": "application/zip",
}

// checkSniff refuses bytes that are plainly another type than the one
// named: a PNG's bytes named image/jpeg, a PDF named image/png. Bytes
// whose type the first ones cannot tell are taken at their word.
func checkSniff(named string, head []byte) error {
	mt, _, _ := mime.ParseMediaType(named)
	want, known := sniffable[strings.ToLower(mt)]
	if !known || len(head) == 0 {
		return nil
	}
	got, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	if g, ok := sniffable[got]; ok {
		if g == want {
			return nil
		}
		return bad("the bytes are %s, not %s as mime_type says", got, named)
	}
	if strings.HasPrefix(got, "text/") {
		return bad("the bytes are text, not %s as mime_type says", named)
	}
	return nil
}

// AppendRecord appends p as a compact part record, snake_case, as the
// mapping stage writes it and an agent's input carries it.
func AppendRecord(dst []byte, p *Part) []byte {
	switch p.Kind {
	case Inline:
		dst = append(dst, `{"inline_data":{"mime_type":`...)
		dst = rawjson.AppendString(dst, p.MIME, rawjson.EscapeInvalid)
		if p.Name != "" {
			dst = append(dst, `,"display_name":`...)
			dst = rawjson.AppendString(dst, p.Name, rawjson.EscapeInvalid)
		}
		dst = append(dst, `,"data":"`...)
		dst = append(dst, p.Base64...)
		return append(dst, `"}}`...)
	case File:
		dst = append(dst, `{"file_data":{`...)
		if p.MIME != "" {
			dst = append(dst, `"mime_type":`...)
			dst = rawjson.AppendString(dst, p.MIME, rawjson.EscapeInvalid)
			dst = append(dst, ',')
		}
		if p.Name != "" {
			dst = append(dst, `"display_name":`...)
			dst = rawjson.AppendString(dst, p.Name, rawjson.EscapeInvalid)
			dst = append(dst, ',')
		}
		dst = append(dst, `"file_uri":`...)
		dst = rawjson.AppendString(dst, p.URI, rawjson.EscapeInvalid)
		return append(dst, `}}`...)
	default:
		dst = append(dst, `{"data":`...)
		dst = append(dst, p.Value...)
		return append(dst, '}')
	}
}

// IsRecord reports whether rec, the record p was read from, is already
// the record AppendRecord writes for p, byte for byte: an inline part
// compact, snake_case, its members in AppendRecord's order. Then a writer
// may pass rec on as it is and not copy the bytes (a part may be
// megabytes). Only inline parts are checked; the others are small.
func IsRecord(rec []byte, p *Part) bool {
	if p.Kind != Inline {
		return false
	}
	var a [256]byte
	head := append(a[:0], `{"inline_data":{"mime_type":`...)
	head = rawjson.AppendString(head, p.MIME, rawjson.EscapeInvalid)
	if p.Name != "" {
		head = append(head, `,"display_name":`...)
		head = rawjson.AppendString(head, p.Name, rawjson.EscapeInvalid)
	}
	head = append(head, `,"data":"`...)
	const tail = `"}}`
	if len(rec) != len(head)+len(p.Base64)+len(tail) || !bytes.HasPrefix(rec, head) || !bytes.HasSuffix(rec, []byte(tail)) {
		return false
	}
	data := rec[len(head) : len(rec)-len(tail)]
	return len(data) == 0 || &data[0] == &p.Base64[0] || bytes.Equal(data, p.Base64)
}

// Budget counts the parts of one call, one way, against limits.parts.
// The zero Budget has no caps.
type Budget struct {
	lim  config.Parts
	used int64
}

// NewBudget is a Budget for lim.
func NewBudget(lim config.Parts) *Budget { return &Budget{lim: lim} }

// Take counts p; past lim.Total it is an *Error, TooLarge.
func (b *Budget) Take(p *Part) error {
	size := p.Size
	if p.Kind == Data {
		size = int64(len(p.Value))
	}
	b.used += size
	if b.lim.Total > 0 && b.used > b.lim.Total {
		return &Error{TooLarge: true, Msg: fmt.Sprintf("the call's parts are %d bytes with this one, more than limits.parts.total (%d)", b.used, b.lim.Total)}
	}
	return nil
}

// Limits is the caps b counts against.
func (b *Budget) Limits() config.Parts { return b.lim }

// Used is the bytes counted so far.
func (b *Budget) Used() int64 { return b.used }
