package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// FuzzDecodeEnvelope: any body either decodes to a method name and a
// compact JSON object, or is rejected with a core.RequestError; never a
// panic. A decoded method is the one the body names, under either key:
// class_method and classMethod naming two methods never decode.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"class_method":"query","input":{"message":"hi"}}`,
		`"{\"class_method\":\"get_session\",\"input\":{\"user_id\":\"u\"}}"`,
		`{"classMethod":"list_sessions"}`,
		`{"input":null}`,
		`{"input":"x"}`,
		`{"input":{"n":12345678901234567890123}}`,
		`[1,2]`, `""`, ``, `{`, `"\"{}\""`,
		`{"class_method":"a","class_method":"b"}`, `{"CLASS_METHOD":"a","Input":{}}`,
		`{"input": { "a" : [ 1 , " x " ] } }`, `{"class_method":"a\nb"}`,
		`{"class_method":"a","classMethod":"b"}`, `{"classMethod":"b","class_method":"a"}`, `{"class_method":"a","classMethod":"a"}`,
		`{"class_method":null,"classMethod":"b"}`, `{"class_method":"","classMethod":"b"}`, `"{\"classMethod\":\"b\",\"class_method\":\"a\"}"`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		env, err := Decode(bytes.Clone(body), stream) // it reuses the body's memory
		if err != nil {
			var re *core.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("Decode(%q) error %T %v, want *core.RequestError", body, err, err)
			}
			return
		}
		if env.Method == "" {
			t.Fatalf("Decode(%q) gave an empty method", body)
		}
		if !json.Valid(env.Input) || env.Input[0] != '{' {
			t.Fatalf("Decode(%q) input %q is not a JSON object", body, env.Input)
		}
		var c bytes.Buffer
		json.Compact(&c, env.Input)
		if !bytes.Equal(c.Bytes(), env.Input) {
			t.Fatalf("Decode(%q) input %q is not compact", body, env.Input)
		}
		for _, key := range []string{"class_method", "classMethod"} {
			if named, ok := namedMethod(body, key); ok && named != "" && named != env.Method {
				t.Fatalf("Decode(%q) method %q, but the body's %s is %q", body, env.Method, key, named)
			}
		}
	})
}

// namedMethod is the string the body (or the JSON string holding it)
// gives key, read by encoding/json.
func namedMethod(body []byte, key string) (string, bool) {
	var wrapped string
	if json.Unmarshal(body, &wrapped) == nil {
		body = []byte(wrapped)
	}
	var fields map[string]json.RawMessage
	var m string
	if json.Unmarshal(body, &fields) != nil || json.Unmarshal(fields[key], &m) != nil {
		return "", false
	}
	return m, true
}

// FuzzUnquote: decoding a JSON string in place gives what encoding/json
// gives, for every valid JSON string.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d\u0041"`,
		`"\ud83d\ud83d\ude00"`, `"é中😀"`, "\"\xff\xfe\"", `"{\"class_method\":\"q\"}"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		s = bytes.TrimSpace(s) // as Decode gives it
		if len(s) < 2 || s[0] != '"' || !json.Valid(s) {
			return
		}
		var want string
		if err := json.Unmarshal(s, &want); err != nil {
			return
		}
		if got := unquote(bytes.Clone(s)); string(got) != want {
			t.Fatalf("unquote(%q) = %q, want %q", s, got, want)
		}
	})
}

// FuzzJSONString: the method's name (a string value as rawjson.Members
// delimits it) is decoded as encoding/json decodes it, escapes and
// invalid UTF-8 included.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`""`, `"query"`, `"a\u0062c"`, `"\ud83d"`, "\"\xff\"", `"é"`, `"a\"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' || !json.Valid(s) {
			return
		}
		var want string
		if err := json.Unmarshal(s, &want); err != nil {
			return
		}
		if got := jsonString(s); got != want {
			t.Fatalf("jsonString(%q) = %q, want %q", s, got, want)
		}
	})
}
