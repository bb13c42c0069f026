package adk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// withParts is msg, the newMessage Content, with the caller's parts
// (the input's parts, docs/parts.md) after its own, as ADK's JSON spells
// them: {"inlineData":{"mimeType","data","displayName"}},
// {"fileData":{"mimeType","fileUri","displayName"}}, and a data part as
// a text part of its JSON, as ADK's A2A converter turns a DataPart (ADK's
// Part has no member for data). The base64 is the caller's own string
// when it is standard base64; a part that is malformed is refused (400),
// one over limits.parts with 413, before the run starts.
func withParts(msg, parts json.RawMessage, lim config.Parts) (json.RawMessage, error) {
	if len(parts) == 0 || string(parts) == "null" {
		return msg, nil
	}
	if parts[0] != '[' {
		return nil, &core.InputError{Field: "parts", Msg: "must be a list of parts (inline_data, file_data or data)"}
	}
	var list []json.RawMessage
	if err := json.Unmarshal(parts, &list); err != nil {
		return nil, &core.InputError{Field: "parts", Msg: "must be a list of parts (inline_data, file_data or data)"}
	}
	if len(list) == 0 {
		return msg, nil
	}
	var c map[string]json.RawMessage
	var own []json.RawMessage
	if json.Unmarshal(msg, &c) != nil || json.Unmarshal(c["parts"], &own) != nil {
		return nil, &core.InputError{Field: "message", Msg: "is a Content without a parts list"}
	}
	budget := part.NewBudget(lim)
	for i, raw := range list {
		p, err := part.Parse(raw, lim)
		if err == nil {
			err = budget.Take(p)
		}
		if err != nil {
			return nil, partError(i, err)
		}
		own = append(own, adkPart(p))
	}
	c["parts"], _ = json.Marshal(own)
	return json.Marshal(c)
}

// adkPart is p as a part of an ADK Content, camelCase.
func adkPart(p *part.Part) json.RawMessage {
	var b []byte
	switch p.Kind {
	case part.Inline:
		b = append(b, `{"inlineData":{"mimeType":`...)
		b = rawjson.AppendString(b, p.MIME, rawjson.EscapeInvalid)
		b = append(b, `,"data":"`...)
		b = append(append(b, p.Base64...), '"')
	case part.File:
		b = append(b, `{"fileData":{"fileUri":`...)
		b = rawjson.AppendString(b, p.URI, rawjson.EscapeInvalid)
		if p.MIME != "" {
			b = rawjson.AppendString(append(b, `,"mimeType":`...), p.MIME, rawjson.EscapeInvalid)
		}
	default:
		b = append(b, `{"text":`...)
		b = rawjson.AppendString(b, string(p.Value), rawjson.EscapeInvalid)
		return append(b, '}')
	}
	if p.Name != "" {
		b = rawjson.AppendString(append(b, `,"displayName":`...), p.Name, rawjson.EscapeInvalid)
	}
	return append(b, "}}"...)
}

// partError is the refusal of the caller's part i: 413 over
// limits.parts, else a bad input saying what is wrong.
func partError(i int, err error) error {
	var pe *part.Error
	if errors.As(err, &pe) && pe.TooLarge {
		return &core.RequestError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("input.parts[%d]: %s", i, pe.Msg)}
	}
	return &core.InputError{Field: fmt.Sprintf("parts[%d]", i), Msg: err.Error()}
}
