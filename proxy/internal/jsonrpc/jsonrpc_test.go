package jsonrpc

import (
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	a2a := Rules{MaxID: 8, NullID: true}
	mcp := Rules{MaxID: 8, Responses: true}
	long := `"` + strings.Repeat("x", 8) + `"`
	tests := []struct {
		name     string
		rules    Rules
		body     string
		code     int    // 0: read
		want     string // the error's message contains it, or the method read
		notify   bool
		response bool
	}{
		{"a request", a2a, `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, 0, "m", false, false},
		{"a notification", a2a, `{"jsonrpc":"2.0","method":"m"}`, 0, "m", true, false},
		{"null id where allowed", a2a, `{"jsonrpc":"2.0","id":null,"method":"m"}`, 0, "m", false, false},
		{"null id where not", mcp, `{"jsonrpc":"2.0","id":null,"method":"m"}`, CodeInvalidRequest, `"id" must be a string or a number`, false, false},
		{"an object id", a2a, `{"jsonrpc":"2.0","id":{},"method":"m"}`, CodeInvalidRequest, `"id" must be a string, a number or null`, false, false},
		{"a client's response", mcp, `{"jsonrpc":"2.0","id":1,"result":{}}`, 0, "", true, true},
		{"a client's error response", mcp, `{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}`, 0, "", true, true},
		{"a response without an id", mcp, `{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, `a response must carry the "id"`, false, false},
		{"an error response without an id", mcp, `{"jsonrpc":"2.0","error":{"code":-1,"message":"no"}}`, CodeInvalidRequest, `a response must carry the "id"`, false, false},
		{"a response with a null id", mcp, `{"jsonrpc":"2.0","id":null,"result":{}}`, CodeInvalidRequest, `a response's "id" must be one a request can have`, false, false},
		{"a response with an object id", mcp, `{"jsonrpc":"2.0","id":{},"result":{}}`, CodeInvalidRequest, `a response's "id" must be one a request can have`, false, false},
		{"a response with a long id", mcp, `{"jsonrpc":"2.0","id":` + long + `,"result":{}}`, CodeInvalidRequest, `at most 8 bytes`, false, false},
		{"a response where none is read", a2a, `{"jsonrpc":"2.0","id":1,"result":{}}`, CodeInvalidRequest, `"method" must be a string`, false, false},
		{"not JSON", a2a, `{"jsonrpc":`, CodeParse, "not valid JSON", false, false},
		{"a batch", mcp, ` [{"jsonrpc":"2.0","id":1,"method":"m"}]`, CodeInvalidRequest, "batches are not supported", false, false},
		{"a member twice", a2a, `{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}`, CodeInvalidRequest, `member "method" is given twice`, false, false},
		{"another case", a2a, `{"JSONRPC":"2.0","id":1,"method":"m"}`, CodeInvalidRequest, `"jsonrpc" must be "2.0"`, false, false},
		{"a long id", mcp, `{"jsonrpc":"2.0","id":` + long + `,"method":"m"}`, CodeInvalidRequest, `"id" is longer than 8 bytes`, false, false},
		{"params not an object", mcp, `{"jsonrpc":"2.0","id":1,"method":"m","params":[]}`, CodeInvalidRequest, `"params" must be an object`, false, false},
		{"not an object", a2a, `"hello"`, CodeInvalidRequest, "not a JSON-RPC 2.0 request", false, false},
		{"unknown members ignored", a2a, `{"jsonrpc":"2.0","id":"a","method":"m","x":[1]}`, 0, "m", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Read([]byte(tt.body), tt.rules)
			if tt.code != 0 {
				if err == nil || err.Code != tt.code || !strings.Contains(err.Message, tt.want) {
					t.Fatalf("Read(%s) = %+v, %+v; want code %d saying %q", tt.body, r, err, tt.code, tt.want)
				}
				return
			}
			if err != nil || r.Method != tt.want || r.Notification() != tt.notify || r.Response != tt.response {
				t.Fatalf("Read(%s) = %+v, %+v; want method %q, notification %v, response %v", tt.body, r, err, tt.want, tt.notify, tt.response)
			}
		})
	}
}

// FuzzRead: no panic, and what is read is a message of the rules.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`), true)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, null bool) {
		r, err := Read(body, Rules{MaxID: 16, NullID: null, Responses: !null})
		if err != nil {
			return
		}
		if len(r.ID) > 16 || r.Params != nil && r.Params[0] != '{' || null && r.Response {
			t.Fatalf("Read(%q) = %+v", body, r)
		}
	})
}
