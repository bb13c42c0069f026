package a2a

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The A2A 1.0 proto (testdata/a2a/a2a.proto: the A2A project's
// specification/a2a.proto, Apache License 2.0, unchanged), read well
// enough to check an answer's ProtoJSON against it: every member a field
// of its message (camelCase), of its type, an enum's value one of its
// enum, at most one member of a oneof, every REQUIRED field present.

type protoField struct {
	name, typ        string // name in JSON (camelCase); typ the proto type, "map<K,V>" for a map
	repeated, needed bool
	oneof            string // the oneof it is of, "" for none
}

type protoSchema struct {
	messages map[string][]protoField
	enums    map[string][]string
}

var (
	schemaOnce sync.Once
	schema     protoSchema
	schemaErr  error
)

// a2aSchema is the proto's messages and enums, read once.
func a2aSchema(t *testing.T) protoSchema {
	t.Helper()
	schemaOnce.Do(func() {
		b, err := os.ReadFile("../../testdata/a2a/a2a.proto")
		if err != nil {
			schemaErr = err
			return
		}
		schema = parseProto(string(b))
	})
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schema
}

var (
	protoComment = regexp.MustCompile(`//[^\n]*`)
	protoOption  = regexp.MustCompile(`(?s)option\s*\([^;]*;|option [^;]*;`)
	protoField1  = regexp.MustCompile(`^(repeated |optional )?(map<\s*\w+\s*,\s*[\w.]+\s*>|[\w.]+) (\w+) = \d+\s*(\[.*\])?$`)
)

// parseProto reads the top-level messages and enums of a proto file (the
// A2A proto has no nested ones) and their fields and values.
func parseProto(src string) protoSchema {
	s := protoSchema{messages: map[string][]protoField{}, enums: map[string][]string{}}
	src = protoComment.ReplaceAllString(src, "")
	for _, kind := range []string{"message", "enum"} {
		re := regexp.MustCompile(`(?m)^` + kind + ` (\w+) \{`)
		for _, m := range re.FindAllStringSubmatchIndex(src, -1) {
			name := src[m[2]:m[3]]
			body, depth := src[m[1]:], 1
			end := 0
			for i, c := range body {
				if c == '{' {
					depth++
				} else if c == '}' {
					if depth--; depth == 0 {
						end = i
						break
					}
				}
			}
			body = protoOption.ReplaceAllString(body[:end], "")
			for _, stmt := range strings.FieldsFunc(body, func(r rune) bool { return r == ';' || r == '{' || r == '}' }) {
				stmt = strings.Join(strings.Fields(stmt), " ")
				if stmt == "" || strings.HasPrefix(stmt, "reserved") || strings.HasPrefix(stmt, "oneof ") {
					continue
				}
				if kind == "enum" {
					v, _, _ := strings.Cut(stmt, " =")
					s.enums[name] = append(s.enums[name], v)
					continue
				}
				f := protoField1.FindStringSubmatch(stmt)
				if f == nil {
					continue
				}
				s.messages[name] = append(s.messages[name], protoField{
					name: camel(f[3]), typ: strings.ReplaceAll(f[2], " ", ""), repeated: f[1] == "repeated ",
					needed: strings.Contains(f[4], "REQUIRED"),
				})
			}
		}
	}
	// The flat reading above cannot tell where a oneof's braces end: a
	// field is of the oneof whose braces hold it.
	for name := range s.messages {
		s.messages[name] = oneofsOf(src, name, s.messages[name])
	}
	return s
}

// oneofsOf sets the oneof of each field of message name from the braces
// that hold it in src.
func oneofsOf(src, name string, fields []protoField) []protoField {
	i := strings.Index(src, "\nmessage "+name+" {")
	body := src[i:]
	body = body[:strings.Index(body, "\n}")]
	inOneof := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)oneof (\w+) \{(.*?)\}`).FindAllStringSubmatch(body, -1) {
		for _, line := range strings.Split(m[2], ";") {
			if f := protoField1.FindStringSubmatch(strings.Join(strings.Fields(protoOption.ReplaceAllString(line, "")), " ")); f != nil {
				inOneof[camel(f[3])] = m[1]
			}
		}
	}
	for i := range fields {
		fields[i].oneof = inOneof[fields[i].name]
	}
	return fields
}

// camel is a proto field's JSON name.
func camel(snake string) string {
	parts := strings.Split(snake, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// checkProto checks that b is the ProtoJSON of message typ: it reports
// each way it is not, by its path. extra are members the top level may
// have besides the message's (the card's 0.3 fields).
func checkProto(t *testing.T, what string, b []byte, typ string, extra ...string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	for _, p := range a2aSchema(t).check(v, typ, typ, extra) {
		t.Errorf("%s is no %s: %s\n%s", what, typ, p, b)
	}
}

func (s protoSchema) check(v any, typ, path string, extra []string) []string {
	switch typ {
	case "string":
		if _, ok := v.(string); !ok {
			return []string{path + ": not a string"}
		}
		return nil
	case "bool":
		if _, ok := v.(bool); !ok {
			return []string{path + ": not a bool"}
		}
		return nil
	case "int32", "int64", "uint32", "uint64", "double", "float":
		switch v.(type) {
		case json.Number, string:
			return nil
		}
		return []string{path + ": not a number"}
	case "bytes":
		if _, ok := v.(string); !ok {
			return []string{path + ": not base64"}
		}
		return nil
	case "google.protobuf.Value":
		return nil
	case "google.protobuf.Struct", "google.protobuf.Empty":
		if _, ok := v.(map[string]any); !ok {
			return []string{path + ": not an object"}
		}
		return nil
	case "google.protobuf.Timestamp":
		if str, ok := v.(string); !ok || !strings.HasSuffix(str, "Z") {
			return []string{path + ": not a UTC timestamp"}
		} else if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
			return []string{path + ": " + err.Error()}
		}
		return nil
	}
	if values, ok := s.enums[typ]; ok {
		if str, _ := v.(string); !slices.Contains(values, str) {
			return []string{fmt.Sprintf("%s: %v is no %s", path, v, typ)}
		}
		return nil
	}
	fields, ok := s.messages[typ]
	if !ok {
		return []string{path + ": the proto has no type " + typ}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{path + ": not an object"}
	}
	var problems []string
	oneofs := map[string]string{}
	for key, val := range obj {
		i := slices.IndexFunc(fields, func(f protoField) bool { return f.name == key })
		if i < 0 {
			if !slices.Contains(extra, key) {
				problems = append(problems, path+"."+key+": no field of "+typ)
			}
			continue
		}
		f := fields[i]
		if f.oneof != "" {
			if other, twice := oneofs[f.oneof]; twice {
				problems = append(problems, fmt.Sprintf("%s: %s and %s, both of oneof %s", path, other, key, f.oneof))
			}
			oneofs[f.oneof] = key
		}
		if kv, isMap := strings.CutPrefix(f.typ, "map<"); isMap {
			_, vt, _ := strings.Cut(strings.TrimSuffix(kv, ">"), ",")
			m, ok := val.(map[string]any)
			if !ok {
				problems = append(problems, path+"."+key+": not a map")
				continue
			}
			for mk, mv := range m {
				problems = append(problems, s.check(mv, vt, path+"."+key+"["+mk+"]", nil)...)
			}
			continue
		}
		if f.repeated {
			list, ok := val.([]any)
			if !ok {
				problems = append(problems, path+"."+key+": not a list")
				continue
			}
			for j, e := range list {
				problems = append(problems, s.check(e, f.typ, fmt.Sprintf("%s.%s[%d]", path, key, j), nil)...)
			}
			continue
		}
		problems = append(problems, s.check(val, f.typ, path+"."+key, nil)...)
	}
	for _, f := range fields {
		if _, there := obj[f.name]; f.needed && !there {
			problems = append(problems, path+": no "+f.name+", a REQUIRED field")
		}
	}
	return problems
}

// TestProtoSchemaRead: the proto is read as it is: a message's fields
// with their types, REQUIRED and oneofs, an enum's values.
func TestProtoSchemaRead(t *testing.T) {
	s := a2aSchema(t)
	part := s.messages["Part"]
	i := slices.IndexFunc(part, func(f protoField) bool { return f.name == "mediaType" })
	j := slices.IndexFunc(part, func(f protoField) bool { return f.name == "text" })
	if len(s.messages) < 40 || i < 0 || j < 0 || part[j].oneof != "content" || part[i].oneof != "" ||
		!slices.Contains(s.enums["TaskState"], "TASK_STATE_CANCELED") || !slices.Contains(s.enums["Role"], "ROLE_AGENT") {
		t.Fatalf("the proto read as %d messages, Part %+v, TaskState %v", len(s.messages), part, s.enums["TaskState"])
	}
	task := s.messages["Task"]
	if k := slices.IndexFunc(task, func(f protoField) bool { return f.name == "id" }); k < 0 || !task[k].needed {
		t.Errorf("Task's id is not REQUIRED: %+v", task)
	}
	var problems []string
	for _, bad := range []string{`{"task":{"id":"t","contextId":"c","status":{"state":"completed"}}}`,
		`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}},"message":{}}`,
		`{"task":{"kind":"task","id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`,
		`{"task":{"contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`} {
		var v any
		json.Unmarshal([]byte(bad), &v)
		if p := s.check(v, "SendMessageResponse", "SendMessageResponse", nil); len(p) == 0 {
			problems = append(problems, bad)
		}
	}
	if len(problems) > 0 {
		t.Errorf("taken for a SendMessageResponse: %s", strings.Join(problems, "\n"))
	}
}

// TestProtoJSON: every A2A 1.0 answer is the ProtoJSON of its message
// in the specification's proto: over JSON-RPC SendMessage's result a
// SendMessageResponse, each SendStreamingMessage event a StreamResponse,
// GetTask's and CancelTask's a Task, for a streaming agent and a failing
// one; the card an AgentCard (with 0.3's fields beside); ListTasks's a
// ListTasksResponse over both bindings, a subscription's first event a
// StreamResponse over both. HTTP+JSON's
// answers are checked in TestRESTMessage, TestRESTStream and
// TestRESTGeminiEnterprise.
func TestProtoJSON(t *testing.T) {
	for _, method := range []string{"stream_query", "fail", "query"} {
		url := serve(t, method)
		r := call(t, url, "1.0", send1("1", "SendMessage", "hi"))
		checkProto(t, method+": SendMessage's result", r.Result, "SendMessageResponse")
		for i, e := range streamEvents(t, url, method) {
			checkProto(t, fmt.Sprintf("%s: SendStreamingMessage's event %d", method, i), e.Result, "StreamResponse")
		}
		id := decode[struct{ Task taskJSON }](t, r.Result).Task.ID
		r = call(t, url, "1.0", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+id+`"}}`)
		checkProto(t, method+": GetTask's result", r.Result, "Task")
	}
	url, _, _ := serveMap(t, "slow", testMap, startAgent(t))
	first, _ := holdStream(t, url)
	r := call(t, url, "1.0", `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"`+first.ID+`"}}`)
	checkProto(t, "CancelTask's result", r.Result, "Task")
	resp, b := restDo(t, "GET", url+RouteCard, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("the card: %d", resp.StatusCode)
	}
	checkProto(t, "the card", b, "AgentCard", "url", "protocolVersion", "preferredTransport", "additionalInterfaces")

	// ListTasks over both bindings, and a subscription's events (the
	// task as it is, then its updates) over both.
	r = call(t, url, "1.0", `{"jsonrpc":"2.0","id":5,"method":"ListTasks","params":{"includeArtifacts":true}}`)
	checkProto(t, "ListTasks's result", r.Result, "ListTasksResponse")
	resp, b = restDo(t, "GET", url+"/tasks?includeArtifacts=true", "1.0", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /tasks: %d %s", resp.StatusCode, b)
	}
	checkProto(t, "GET /tasks", b, "ListTasksResponse")
	held, _ := holdStream(t, url)
	sub := rpc(t, url, "1.0", `{"jsonrpc":"2.0","id":6,"method":"SubscribeToTask","params":{"id":"`+held.ID+`"}}`)
	defer sub.Body.Close()
	checkProto(t, "SubscribeToTask's first event", firstData(t, sub, true), "StreamResponse")
	rest := restSubscribe(t, url+"/tasks/"+held.ID+":subscribe")
	defer rest.Body.Close()
	checkProto(t, "POST /tasks/{id}:subscribe's first event", firstData(t, rest, false), "StreamResponse")
}

// streamEvents are SendStreamingMessage's events on method, none on a
// unary method (it does not stream: TestStreamingUnsupported).
func streamEvents(t *testing.T, url, method string) []rpcResult {
	if method == "query" {
		return nil
	}
	return readEvents(t, rpc(t, url, "1.0", send1("2", "SendStreamingMessage", "hi")))
}

// firstData is the first SSE data of resp: the result of its JSON-RPC
// response (rpc), or the data itself.
func firstData(t *testing.T, resp *http.Response, rpc bool) []byte {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if rpc {
				return decode[rpcResult](t, []byte(data)).Result
			}
			return []byte(data)
		}
	}
	t.Fatalf("no event: %v", sc.Err())
	return nil
}

// restSubscribe POSTs an HTTP+JSON 1.0 subscription, its stream open.
func restSubscribe(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, http.NoBody)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return resp
}
