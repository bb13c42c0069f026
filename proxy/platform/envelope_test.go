package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

func TestDecodeEnvelope(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		stream     bool
		wantMethod string
		wantInput  string
		wantErr    string // substring of the core.RequestError; "" means success
	}{
		{name: "plain", body: `{"class_method":"query","input":{"message":"hi"}}`, wantMethod: "query", wantInput: `{"message":"hi"}`},
		{name: "double encoded", body: `"{\"class_method\":\"get_session\",\"input\":{\"user_id\":\"u\"}}"`, wantMethod: "get_session", wantInput: `{"user_id":"u"}`},
		{name: "double encoded with spaces", body: " \"{ \\\"input\\\" : { } }\" ", wantMethod: "query", wantInput: `{}`},
		{name: "nested string not decoded", body: `{"class_method":"streaming_agent_run_with_events","input":{"request_json":"{\"message\":\"x\"}"}}`, stream: true,
			wantMethod: "streaming_agent_run_with_events", wantInput: `{"request_json":"{\"message\":\"x\"}"}`},
		{name: "camelCase alias", body: `{"classMethod":"list_sessions","input":{}}`, wantMethod: "list_sessions", wantInput: `{}`},
		{name: "both names, different methods", body: `{"class_method":"a","classMethod":"b"}`, wantErr: `names two methods, class_method "a" and classMethod "b"`},
		{name: "both names, camel first", body: `{"classMethod":"b","input":{},"class_method":"a"}`, wantErr: `names two methods, class_method "a" and classMethod "b"`},
		{name: "both names, one empty", body: `{"class_method":"","classMethod":"b"}`, wantErr: `names two methods`},
		{name: "both names, escaped", body: `{"class_method":"a","class\u004dethod":"b"}`, wantErr: `names two methods`},
		{name: "both names, double encoded", body: `"{\"class_method\":\"a\",\"classMethod\":\"b\"}"`, wantErr: `names two methods`},
		{name: "both names, one method", body: `{"class_method":"a","classMethod":"a"}`, wantMethod: "a", wantInput: `{}`},
		{name: "both names, same by escapes", body: `{"class_method":"a","classMethod":"\u0061"}`, wantMethod: "a", wantInput: `{}`},
		{name: "camel not a string", body: `{"class_method":"a","classMethod":7}`, wantErr: "classMethod must be a string, got a number"},
		{name: "null camel ignored", body: `{"class_method":"a","classMethod":null}`, wantMethod: "a", wantInput: `{}`},
		{name: "null snake falls back to camel", body: `{"class_method":null,"classMethod":"b"}`, wantMethod: "b", wantInput: `{}`},
		{name: "extra keys ignored", body: `{"class_method":"query","input":{},"spec":{"x":1},"trace":true}`, wantMethod: "query", wantInput: `{}`},
		{name: "missing method unary default", body: `{"input":{"message":"x"}}`, wantMethod: "query", wantInput: `{"message":"x"}`},
		{name: "missing method stream default", body: `{"input":{}}`, stream: true, wantMethod: "stream_query", wantInput: `{}`},
		{name: "empty method is default", body: `{"class_method":"","input":{}}`, stream: true, wantMethod: "stream_query", wantInput: `{}`},
		{name: "missing input", body: `{"class_method":"query"}`, wantMethod: "query", wantInput: `{}`},
		{name: "null input", body: `{"class_method":"query","input":null}`, wantMethod: "query", wantInput: `{}`},
		{name: "input compacted", body: "{\"input\": {\"a\" : [1, 2],\n \"b\": {}}}", wantMethod: "query", wantInput: `{"a":[1,2],"b":{}}`},
		{name: "large integers survive", body: `{"input":{"n":12345678901234567890123,"f":1.0e400}}`, wantMethod: "query", wantInput: `{"n":12345678901234567890123,"f":1.0e400}`},
		{name: "empty body", body: ``, wantErr: "request body is empty"},
		{name: "whitespace body", body: " \n\t", wantErr: "request body is empty"},
		{name: "empty string body", body: `""`, wantErr: "empty string"},
		{name: "truncated", body: `{"class_method":"query","input":{`, wantErr: "not valid JSON"},
		{name: "not json", body: `class_method=query`, wantErr: "not valid JSON"},
		{name: "bad double encoding", body: `"{\"class_method\"`, wantErr: "not valid JSON"},
		{name: "double encoded non-json", body: `"hello"`, wantErr: "request body is a JSON string, but the text it holds is not valid JSON"},
		{name: "triple encoded is not decoded twice", body: `"\"{}\""`, wantErr: "request body is a JSON string holding a string; want {"},
		{name: "double encoded number", body: `"42"`, wantErr: "request body is a JSON string holding a number"},
		{name: "other case is not a key", body: `{"Class_Method":"x","INPUT":{"a":1},"classmethod":"y"}`, wantMethod: "query", wantInput: `{}`},
		{name: "escaped key is the key", body: `{"class\u005fmethod":"m","\u0069nput":{"a":1}}`, wantMethod: "m", wantInput: `{"a":1}`},
		{name: "duplicate method", body: `{"class_method":"a","class_method":"b"}`, wantErr: `the key "class_method" twice`},
		{name: "duplicate input", body: `{"input":{"a":1},"input":{"b":2}}`, wantErr: `the key "input" twice`},
		{name: "duplicate escaped", body: `{"classMethod":"a","class\u004dethod":"b"}`, wantErr: `the key "classMethod" twice`},
		{name: "input compacted in place", body: "{\"input\" : {\"a b\" : \" x , y \",\n\"c\":[ 1 , \"  \" , {} ] } , \"class_method\" : \"q\"}", wantMethod: "q", wantInput: `{"a b":" x , y ","c":[1,"  ",{}]}`},
		{name: "method with dots and dashes", body: `{"class_method":"my-tool.v2_x"}`, wantMethod: "my-tool.v2_x", wantInput: `{}`},
		{name: "method longest", body: `{"class_method":"` + strings.Repeat("m", 256) + `"}`, wantMethod: strings.Repeat("m", 256), wantInput: `{}`},
		{name: "method too long", body: `{"class_method":"` + strings.Repeat("m", 257) + `"}`, wantErr: "is not a method name"},
		{name: "method with newline", body: `{"class_method":"a\nb"}`, wantErr: `class_method "a\nb" is not a method name`},
		{name: "method with slash", body: `{"class_method":"a/b"}`, wantErr: "is not a method name"},
		{name: "method with space", body: `{"class_method":"a b"}`, wantErr: "is not a method name"},
		{name: "method starting with a digit", body: `{"class_method":"1a"}`, wantErr: "is not a method name"},
		{name: "method starting with a dot", body: `{"class_method":".."}`, wantErr: "is not a method name"},
		{name: "method with a control character", body: `{"class_method":"a\u0000"}`, wantErr: "is not a method name"},
		{name: "method not ascii", body: `{"class_method":"é"}`, wantErr: "is not a method name"},
		{name: "array body", body: `[{"class_method":"query"}]`, wantErr: "got an array"},
		{name: "number body", body: `42`, wantErr: "got a number"},
		{name: "null body", body: `null`, wantErr: "got null"},
		{name: "method not string", body: `{"class_method":7}`, wantErr: "class_method must be a string, got a number"},
		{name: "input string", body: `{"class_method":"query","input":"hi"}`, wantErr: "input must be a JSON object, got a string"},
		{name: "input array", body: `{"input":[1]}`, wantErr: "input must be a JSON object, got an array"},
		{name: "input number", body: `{"input":3}`, wantErr: "got a number"},
		{name: "input bool", body: `{"input":false}`, wantErr: "got a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Decode([]byte(tt.body), tt.stream)
			if tt.wantErr != "" {
				var re *core.RequestError
				if !errors.As(err, &re) || !strings.Contains(re.Msg, tt.wantErr) {
					t.Fatalf("Decode(%q) error = %v, want a core.RequestError containing %q", tt.body, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q) error = %v", tt.body, err)
			}
			if env.Method != tt.wantMethod || string(env.Input) != tt.wantInput {
				t.Errorf("Decode(%q) = (%q, %s), want (%q, %s)", tt.body, env.Method, env.Input, tt.wantMethod, tt.wantInput)
			}
		})
	}
}

// TestDecodeEnvelopeInPlace: decoding reuses the body's memory, the
// object or a JSON string holding it: the allocations do not grow with
// the body, so a call holds its body once.
func TestDecodeEnvelopeInPlace(t *testing.T) {
	input := `{"text": "` + strings.Repeat(`a \"quoted\" é line\n`, 200000) + `", "n": [1, 2, 3]}`
	plain := `{"class_method": "query", "input": ` + input + `}`
	quoted, _ := json.Marshal(plain)
	for name, body := range map[string]string{"object": plain, "string": string(quoted)} {
		b := []byte(body)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		env, err := Decode(b, false)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want bytes.Buffer
		json.Compact(&want, []byte(input))
		if !bytes.Equal(env.Input, want.Bytes()) {
			t.Errorf("%s: input not compacted byte-exact", name)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(body))/8 {
			t.Errorf("decoding a %d KiB envelope (%s) allocated %d KiB, want it decoded in place", len(body)>>10, name, alloc>>10)
		}
	}
}
