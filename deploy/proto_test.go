package deploy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// describedMap gives its methods descriptions and parameters.
const describedMap = `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query:
    call: POST /query/{user_id}
    description: Answers one message.
    parameters:
      type: object
      properties:
        message: {type: string}
        user_id: {type: string}
        limit: {type: integer, nullable: true}
      required: [message, user_id]
  stream_query: {mode: stream, description: Streams the answer.}
`

// The create request checked against the API's own definition: the
// ReasoningEngine messages of google.cloud.aiplatform.v1 and v1beta1 as
// the official @google-cloud/aiplatform npm package ships them
// (build/protos/protos.json, protobuf.js's JSON form of the .proto files).
// testdata/aiplatform/install.sh (run by `make deps`) puts the package, at the version its
// package-lock.json pins, into ${SIDECAR_CACHE:-<repo>/.cache}/aiplatform.

// protoNode is a namespace, message or enum of protos.json.
type protoNode struct {
	Fields map[string]protoField `json:"fields"`
	Values map[string]int64      `json:"values"`
	Nested map[string]*protoNode `json:"nested"`
	Oneofs map[string]struct {
		Oneof []string `json:"oneof"`
	} `json:"oneofs"`
}

// protoField is one field; KeyType is set for a map field.
type protoField struct {
	Type    string         `json:"type"`
	Rule    string         `json:"rule"`
	KeyType string         `json:"keyType"`
	Options map[string]any `json:"options"`
}

func (f protoField) behaviour() string {
	s, _ := f.Options["(google.api.field_behavior)"].(string)
	return s
}

// protoSchema resolves type names as protobuf does: a name is looked up in
// the scope it is used in, then in each enclosing scope.
type protoSchema struct{ root *protoNode }

func (s protoSchema) node(path []string) *protoNode {
	n := s.root
	for _, p := range path {
		if n == nil || n.Nested == nil {
			return nil
		}
		n = n.Nested[p]
	}
	return n
}

// resolve finds name from scope; it returns the type's full path.
func (s protoSchema) resolve(scope []string, name string) ([]string, *protoNode) {
	parts := strings.Split(strings.TrimPrefix(name, "."), ".")
	for i := len(scope); i >= 0; i-- {
		path := append(slices.Clone(scope[:i]), parts...)
		if n := s.node(path); n != nil {
			return path, n
		}
	}
	return nil, nil
}

// check walks v (decoded with UseNumber) as a value of the message at
// path and reports every problem: unknown fields, wrong JSON types, enum
// names the enum lacks, output-only fields set, required fields missing,
// two members of one oneof.
func (s protoSchema) check(v any, path []string, at string) []string {
	msg := s.node(path)
	full := strings.Join(path, ".")
	switch full {
	case "google.protobuf.Struct":
		if _, ok := v.(map[string]any); !ok {
			return []string{fmt.Sprintf("%s: %s wants a JSON object, got %T", at, full, v)}
		}
		return nil
	case "google.protobuf.Value":
		return nil
	case "google.protobuf.Duration":
		if s, ok := v.(string); !ok || !regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`).MatchString(s) {
			return []string{fmt.Sprintf("%s: %s wants a string like \"3.5s\", got %#v", at, full, v)}
		}
		return nil
	case "google.protobuf.Timestamp":
		if _, ok := v.(string); !ok {
			return []string{fmt.Sprintf("%s: %s wants an RFC 3339 string, got %#v", at, full, v)}
		}
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: message %s wants a JSON object, got %#v", at, full, v)}
	}
	var problems []string
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f, ok := msg.Fields[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s.%s: %s has no field %q", at, k, full, k))
			continue
		}
		if b := f.behaviour(); b == "OUTPUT_ONLY" || b == "IDENTIFIER" {
			problems = append(problems, fmt.Sprintf("%s.%s: %s (not settable in a request)", at, k, b))
		}
		problems = append(problems, s.field(obj[k], f, path, at+"."+k)...)
	}
	for k, f := range msg.Fields {
		if _, set := obj[k]; !set && f.behaviour() == "REQUIRED" {
			problems = append(problems, fmt.Sprintf("%s: required field %s.%s missing", at, full, k))
		}
	}
	for name, o := range msg.Oneofs {
		var set []string
		for _, k := range o.Oneof {
			if _, ok := obj[k]; ok {
				set = append(set, k)
			}
		}
		if len(set) > 1 {
			problems = append(problems, fmt.Sprintf("%s: %v all set, but oneof %s takes one", at, set, name))
		}
	}
	return problems
}

// field checks the value of one field: repeated, map or single.
func (s protoSchema) field(v any, f protoField, scope []string, at string) []string {
	switch {
	case f.Rule == "repeated":
		l, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: repeated %s wants a JSON array, got %#v", at, f.Type, v)}
		}
		var problems []string
		for i, e := range l {
			problems = append(problems, s.single(e, f.Type, scope, fmt.Sprintf("%s[%d]", at, i))...)
		}
		return problems
	case f.KeyType != "":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: map<%s, %s> wants a JSON object, got %#v", at, f.KeyType, f.Type, v)}
		}
		var problems []string
		for k, e := range m {
			problems = append(problems, s.single(e, f.Type, scope, fmt.Sprintf("%s[%q]", at, k))...)
		}
		return problems
	}
	return s.single(v, f.Type, scope, at)
}

// single checks one value of a scalar, enum or message type.
func (s protoSchema) single(v any, typ string, scope []string, at string) []string {
	bad := func(want string) []string { return []string{fmt.Sprintf("%s: %s wants %s, got %#v", at, typ, want, v)} }
	switch typ {
	case "string":
		if _, ok := v.(string); !ok {
			return bad("a JSON string")
		}
		return nil
	case "bool":
		if _, ok := v.(bool); !ok {
			return bad("true or false")
		}
		return nil
	case "bytes":
		if str, ok := v.(string); !ok {
			return bad("a base64 string")
		} else if _, err := base64.StdEncoding.DecodeString(str); err != nil {
			return bad("a base64 string")
		}
		return nil
	case "double", "float":
		if _, ok := v.(json.Number); !ok {
			return bad("a JSON number")
		}
		return nil
	case "int32", "sint32", "sfixed32", "uint32", "fixed32":
		// Sent as numbers: the request never uses the string form.
		n, ok := v.(json.Number)
		if !ok {
			return bad("a JSON number")
		}
		i, err := n.Int64()
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if strings.Contains(typ, "uint") || strings.HasPrefix(typ, "fixed") {
			lo, hi = 0, math.MaxUint32
		}
		if err != nil || i < lo || i > hi {
			return bad("a whole number in its range")
		}
		return nil
	case "int64", "sint64", "sfixed64", "uint64", "fixed64":
		switch v.(type) {
		case json.Number, string:
			return nil
		}
		return bad("a number or a decimal string")
	}
	path, n := s.resolve(scope, typ)
	if n == nil {
		return []string{fmt.Sprintf("%s: type %s not found from %s", at, typ, strings.Join(scope, "."))}
	}
	if n.Values != nil {
		name, ok := v.(string)
		if _, known := n.Values[name]; !ok || !known {
			keys := make([]string, 0, len(n.Values))
			for k := range n.Values {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return bad("one of " + strings.Join(keys, ", "))
		}
		return nil
	}
	return s.check(v, path, at)
}

// keepAliveMap serves the keep-alive probe on a port other than 8080:
// the request names the port and the probe.
const keepAliveMap = `
upstream: {url: "http://127.0.0.1:8000"}
listen: ":9000"
keep_alive_probe: {path: /busy, max_seconds: 600}
methods: {query: {}}
`

// notInProtos are the fields deploy-request writes that the installed
// @google-cloud/aiplatform's protos (7.4.0, the newest on npm when they
// were written) do not have yet: ReasoningEngineSpec.ContainerSpec.port
// and DeploymentSpec.keepAliveProbe, as python-aiplatform's types
// declare them (commit ff859e1d0; httpGet.path required, port and
// maxSeconds int32); and ReasoningEngineSpec.agentCard, which --a2a
// writes, as python-aiplatform declares it (agentplatform/_genai/types/
// common.py, ReasoningEngineSpec.agent_card: "dict[str, Any]", "The A2A
// Agent Card for the agent", commit 91cc8ce4f; its field number is not
// public, so 100 stands in). addNotInProtos adds them to the schema, so the walk
// still checks their names, nesting and JSON types, against this
// declaration instead of Google's; TestNotInProtos fails once the protos
// have them, so that this list goes and their own definition is used.
var notInProtos = map[string]string{
	"ReasoningEngineSpec.ContainerSpec.port":            `{"type": "int32", "id": 2, "options": {"(google.api.field_behavior)": "OPTIONAL"}}`,
	"ReasoningEngineSpec.DeploymentSpec.keepAliveProbe": `{"type": "KeepAliveProbe", "id": 9, "options": {"(google.api.field_behavior)": "OPTIONAL"}}`,
	"ReasoningEngineSpec.agentCard":                     `{"type": "google.protobuf.Struct", "id": 100, "options": {"(google.api.field_behavior)": "OPTIONAL"}}`,
}

// keepAliveProbeType is the message of keepAliveProbe, nested in
// DeploymentSpec (see notInProtos).
const keepAliveProbeType = `{
	"fields": {
		"httpGet": {"type": "HttpGetAction", "id": 1},
		"maxSeconds": {"type": "int32", "id": 2}
	},
	"nested": {"HttpGetAction": {"fields": {
		"path": {"type": "string", "id": 1, "options": {"(google.api.field_behavior)": "REQUIRED"}},
		"port": {"type": "int32", "id": 2}
	}}}
}`

// addNotInProtos adds notInProtos to version's messages; it fails the
// test if one of them is there already.
func addNotInProtos(t *testing.T, s protoSchema, version string) {
	t.Helper()
	base := []string{"google", "cloud", "aiplatform", version}
	for name, field := range notInProtos {
		parts := strings.Split(name, ".")
		msg := s.node(append(slices.Clone(base), parts[:len(parts)-1]...))
		if msg == nil {
			t.Fatalf("protos.json has no %s.%s", version, strings.Join(parts[:len(parts)-1], "."))
		}
		if _, ok := msg.Fields[parts[len(parts)-1]]; ok {
			t.Fatalf("protos.json has %s.%s now: drop it from notInProtos, the protos check it", version, name)
		}
		var f protoField
		if err := json.Unmarshal([]byte(field), &f); err != nil {
			t.Fatal(err)
		}
		msg.Fields[parts[len(parts)-1]] = f
	}
	deployment := s.node(append(slices.Clone(base), "ReasoningEngineSpec", "DeploymentSpec"))
	var probe protoNode
	if err := json.Unmarshal([]byte(keepAliveProbeType), &probe); err != nil {
		t.Fatal(err)
	}
	if deployment.Nested == nil {
		deployment.Nested = map[string]*protoNode{}
	}
	deployment.Nested["KeepAliveProbe"] = &probe
}

// TestNotInProtos: the fields notInProtos declares are still missing
// from the installed protos, in v1 and v1beta1 (else the check should
// use the protos' own), and without the declaration the walk refuses
// the request that sets them.
func TestNotInProtos(t *testing.T) {
	schema := loadProtos(t)
	body, err := CreateRequest(parse(t, keepAliveMap), RequestOptions{DisplayName: "x", Image: "r/i"})
	if err != nil {
		t.Fatal(err)
	}
	a2aBody, err := CreateRequest(parse(t, a2aMap), RequestOptions{DisplayName: "x", Image: "r/i", A2ACard: a2aCardOf(t, a2aMap)})
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"v1", "v1beta1"} {
		got := strings.Join(schema.check(decode(t, body), []string{"google", "cloud", "aiplatform", version, "ReasoningEngine"}, "body"), "\n")
		got += "\n" + strings.Join(schema.check(decode(t, a2aBody), []string{"google", "cloud", "aiplatform", version, "ReasoningEngine"}, "body"), "\n")
		for _, want := range []string{`has no field "port"`, `has no field "keepAliveProbe"`, `has no field "agentCard"`} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: the installed protos on the keep-alive request = %q, want a problem containing %q (do they have it now?)", version, got, want)
			}
		}
	}
}

// loadProtos reads protos.json, as `make deps` installed it.
func loadProtos(t *testing.T) protoSchema {
	t.Helper()
	b, err := os.ReadFile(deps.NPM(t, "aiplatform"))
	if err != nil {
		t.Fatal(err)
	}
	var root protoNode
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatalf("protos.json: %v", err)
	}
	return protoSchema{root: &root}
}

// fullRequest sets every option deploy-request has, for version.
func fullRequest(t *testing.T, yaml, version string) []byte {
	t.Helper()
	opts := RequestOptions{
		DisplayName:    "every option",
		Description:    "all fields set",
		Image:          "us-central1-docker.pkg.dev/p/agents/a:1",
		Framework:      "custom",
		ServiceAccount: "sa@p.iam.gserviceaccount.com",
		Methods:        []ClassMethod{{Name: "chat", APIMode: "stream"}},
		Env:            []EnvVar{{"A", "1"}, {"EMPTY", ""}},
		SecretEnv:      []SecretEnvVar{{Name: "K", SecretRef: SecretRef{Secret: "k", Version: "2"}}},
		MinInstances:   ptr(0),
		MaxInstances:   ptr(100),
		CPU:            "4",
		Memory:         "8Gi",
		Concurrency:    ptr(9),
		Labels:         map[string]string{"team": "agents", "env": ""},
		KMSKey:         "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
		IdentityType:   "AGENT_IDENTITY",
		PSC: &PSCInterface{
			NetworkAttachment: "projects/p/regions/us-central1/networkAttachments/na",
			DNSPeering:        []DNSPeering{{Domain: "corp.example.", TargetProject: "p", TargetNetwork: "vpc"}},
		},
		APIVersion: version,
	}
	if version == "v1beta1" {
		opts.ContextSpec = json.RawMessage(`{"memoryBankConfig": {"generationConfig": {"model": "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"},
			"ttlConfig": {"defaultTtl": "86400s"}}}`)
	}
	b, err := CreateRequest(parse(t, yaml), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequestMatchesProtos walks deploy-request's bodies (every option set,
// for a plain map, the ADK preset and a map with method descriptions)
// against ReasoningEngine in v1 and v1beta1: every field exists, nested and
// typed as the proto says.
func TestRequestMatchesProtos(t *testing.T) {
	schema := loadProtos(t)
	maps := map[string]string{"python": pythonMap, "adk": adkMap, "described": describedMap, "keep-alive": keepAliveMap}
	for _, version := range []string{"v1", "v1beta1"} {
		addNotInProtos(t, schema, version)
		path := []string{"google", "cloud", "aiplatform", version, "ReasoningEngine"}
		if schema.node(path) == nil {
			t.Fatalf("protos.json has no %s", strings.Join(path, "."))
		}
		for name, yaml := range maps {
			t.Run(version+"/"+name, func(t *testing.T) {
				minimal, err := CreateRequest(parse(t, yaml), RequestOptions{DisplayName: "x", Image: "r/i"})
				if err != nil {
					t.Fatal(err)
				}
				for _, body := range [][]byte{fullRequest(t, yaml, version), minimal} {
					for _, p := range schema.check(decode(t, body), path, "body") {
						t.Error(p)
					}
				}
			})
		}
		// --a2a's request: spec.agentCard and the a2a_extension methods.
		t.Run(version+"/a2a", func(t *testing.T) {
			body, err := CreateRequest(parse(t, a2aMap), RequestOptions{DisplayName: "x", Image: "r/i", A2ACard: a2aCardOf(t, a2aMap)})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(body, []byte(`"agentCard"`)) || !bytes.Contains(body, []byte(`"a2a_extension"`)) {
				t.Fatalf("the --a2a request has no agentCard or a2a_extension method:\n%s", body)
			}
			for _, p := range schema.check(decode(t, body), path, "body") {
				t.Error(p)
			}
		})
	}

	// The walk can fail: each of these small mistakes is caught.
	path := []string{"google", "cloud", "aiplatform", "v1", "ReasoningEngine"}
	for _, tc := range []struct{ body, want string }{
		{`{"displayName": "x", "spec": {"deploymentSpec": {"minInstances": "1"}}}`, "int32 wants a JSON number"},
		{`{"displayName": "x", "spec": {"deploymentSpec": {"min_instances": 1}}}`, `has no field "min_instances"`},
		{`{"displayName": "x", "spec": {"deploymentSpec": {"env": {"A": "1"}}}}`, "repeated EnvVar wants a JSON array"},
		{`{"displayName": "x", "spec": {"deploymentSpec": {"env": [{"name": "A"}]}}}`, "required field google.cloud.aiplatform.v1.EnvVar.value missing"},
		{`{"displayName": "x", "spec": {"identityType": "ROBOT"}}`, "one of AGENT_IDENTITY"},
		{`{"displayName": "x", "spec": {"classMethods": [[]]}}`, "wants a JSON object"},
		{`{"displayName": "x", "labels": {"a": 1}}`, "string wants a JSON string"},
		{`{"displayName": "x", "contextSpec": {}}`, `has no field "contextSpec"`},
		{`{"displayName": "x", "createTime": "2020-01-01T00:00:00Z"}`, "OUTPUT_ONLY"},
		{`{"spec": {"containerSpec": {"imageUri": "i"}, "sourceCodeSpec": {}}}`, "oneof deploymentSource"},
		{`{"spec": {}}`, "required field google.cloud.aiplatform.v1.ReasoningEngine.displayName missing"},
		{`{"displayName": "x", "spec": {"deploymentSpec": {"keepAliveProbe": {"httpGet": {}}}}}`, "required field google.cloud.aiplatform.v1.ReasoningEngineSpec.DeploymentSpec.KeepAliveProbe.HttpGetAction.path missing"},
		{`{"displayName": "x", "spec": {"deploymentSpec": {"keepAliveProbe": {"httpGet": {"path": "/busy"}, "maxSeconds": "600"}}}}`, "int32 wants a JSON number"},
		{`{"displayName": "x", "spec": {"containerSpec": {"imageUri": "i", "port": "9000"}}}`, "int32 wants a JSON number"},
		{`{"displayName": "x", "spec": {"agentCard": "{}"}}`, "google.protobuf.Struct wants a JSON object"},
	} {
		var v map[string]any
		d := json.NewDecoder(strings.NewReader(tc.body))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(schema.check(v, path, "body"), "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("check(%s) = %q, want a problem containing %q", tc.body, got, tc.want)
		}
	}
}
