package deploy

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
)

// TestCreateRequestInstanceRanges holds minInstances and maxInstances to
// the proto's documented ranges: [0, 10] and [1, 1000], [1, 100] with a
// PSC interface.
func TestCreateRequestInstanceRanges(t *testing.T) {
	cfg := parse(t, pythonMap)
	psc := &PSCInterface{NetworkAttachment: "na"}
	for _, tc := range []struct {
		min, max *int
		psc      *PSCInterface
		want     string // "" for accepted
	}{
		{ptr(0), ptr(1), nil, ""},
		{ptr(10), ptr(1000), nil, ""},
		{ptr(10), ptr(100), psc, ""},
		{ptr(11), nil, nil, "min instances 11: must be 0 to 10"},
		{ptr(-1), nil, nil, "min instances -1: must be 0 to 10"},
		{nil, ptr(1001), nil, "max instances 1001: must be 1 to 1000"},
		{nil, ptr(0), nil, "max instances 0: must be 1 to 1000"},
		{nil, ptr(101), psc, "max instances 101: must be 1 to 100 with a PSC interface"},
	} {
		_, err := CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i", MinInstances: tc.min, MaxInstances: tc.max, PSC: tc.psc})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("min %v max %v psc %v: %v", deref(tc.min), deref(tc.max), tc.psc != nil, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("min %v max %v psc %v: err = %v, want %q", deref(tc.min), deref(tc.max), tc.psc != nil, err, tc.want)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCreateRequestExtras: labels, a customer-managed key, the identity
// type, a PSC interface and (v1beta1) a context spec reach the body where
// ReasoningEngine has them, and the update mask names them.
func TestCreateRequestExtras(t *testing.T) {
	b := fullRequest(t, pythonMap, "v1beta1")
	m := decode(t, b)
	if got := m["labels"]; !reflect.DeepEqual(got, map[string]any{"team": "agents", "env": ""}) {
		t.Errorf("labels = %v", got)
	}
	if got := m["encryptionSpec"]; !reflect.DeepEqual(got, map[string]any{"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"}) {
		t.Errorf("encryptionSpec = %v", got)
	}
	if got := obj(t, obj(t, m["contextSpec"], "contextSpec")["memoryBankConfig"], "memoryBankConfig")["ttlConfig"]; !reflect.DeepEqual(got, map[string]any{"defaultTtl": "86400s"}) {
		t.Errorf("contextSpec.memoryBankConfig.ttlConfig = %v", got)
	}
	spec := obj(t, m["spec"], "spec")
	if spec["identityType"] != "AGENT_IDENTITY" {
		t.Errorf("spec.identityType = %v", spec["identityType"])
	}
	psc := obj(t, obj(t, spec["deploymentSpec"], "deploymentSpec")["pscInterfaceConfig"], "pscInterfaceConfig")
	want := map[string]any{
		"networkAttachment": "projects/p/regions/us-central1/networkAttachments/na",
		"dnsPeeringConfigs": []any{map[string]any{"domain": "corp.example.", "targetProject": "p", "targetNetwork": "vpc"}},
	}
	if !reflect.DeepEqual(psc, want) {
		t.Errorf("pscInterfaceConfig = %v, want %v", psc, want)
	}
	mask, err := UpdateMask(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"labels", "encryption_spec", "context_spec", "spec.identity_type", "spec.deployment_spec.psc_interface_config"} {
		if !strings.Contains(","+mask+",", ","+p+",") {
			t.Errorf("update mask %s lacks %s", mask, p)
		}
	}

	cfg := parse(t, pythonMap)
	good := RequestOptions{DisplayName: "x", Image: "r/i"}
	with := func(f func(*RequestOptions)) RequestOptions { o := good; f(&o); return o }
	many := map[string]string{}
	for i := range 65 {
		many[string(rune('a'+i%26))+strings.Repeat("x", i/26)] = ""
	}
	for _, tc := range []struct {
		name string
		opts RequestOptions
		want []string
	}{
		{"label key", with(func(o *RequestOptions) { o.Labels = map[string]string{"Team": "a", "1x": "b"} }), []string{`label "1x"`, `label "Team"`}},
		{"label value", with(func(o *RequestOptions) { o.Labels = map[string]string{"team": "A B"} }), []string{`label team="A B"`}},
		{"label long", with(func(o *RequestOptions) { o.Labels = map[string]string{"k": strings.Repeat("v", 64)} }), []string{"label k="}},
		{"labels", with(func(o *RequestOptions) { o.Labels = many }), []string{"labels: 65, at most 64"}},
		{"kms", with(func(o *RequestOptions) { o.KMSKey = "my-key" }), []string{`kms key "my-key"`}},
		{"identity", with(func(o *RequestOptions) { o.IdentityType = "IDENTITY_TYPE_UNSPECIFIED" }), []string{"want SERVICE_ACCOUNT or AGENT_IDENTITY"}},
		{"psc", with(func(o *RequestOptions) {
			o.PSC = &PSCInterface{DNSPeering: []DNSPeering{{Domain: "corp.example", TargetProject: "p", TargetNetwork: "vpc"}}}
		}), []string{"a network attachment is required", "the domain ends in a dot"}},
		{"attachment", with(func(o *RequestOptions) { o.PSC = &PSCInterface{NetworkAttachment: "projects/p/na"} }), []string{`network attachment "projects/p/na"`}},
		{"context v1", with(func(o *RequestOptions) { o.ContextSpec = json.RawMessage(`{}`) }), []string{"v1beta1 API only"}},
		{"context type", with(func(o *RequestOptions) { o.ContextSpec, o.APIVersion = json.RawMessage(`[1]`), "v1beta1" }), []string{"context spec: not a JSON object"}},
		{"version", with(func(o *RequestOptions) { o.APIVersion = "v2" }), []string{`api version "v2"`}},
		{"concurrency int32", with(func(o *RequestOptions) { o.Concurrency = ptr(1 << 31) }), []string{"concurrency 2147483648: must be 1 to 2147483647"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := CreateRequest(cfg, tc.opts)
			if err == nil {
				t.Fatalf("no error; body:\n%s", b)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestClassMethodsDescribed: the map's description and parameters reach
// classMethods; an adk.* handler method gets AdkApp's unless it gives its
// own, under another name too.
func TestClassMethodsDescribed(t *testing.T) {
	cfg := parse(t, `
upstream: {url: "http://127.0.0.1:8000"}
adk: {app: x}
methods:
  query: {description: Answers., parameters: {type: object, required: [message]}}
  chat: {handler: adk.async_stream_query}
  new_session: {handler: adk.create_session}
  stream_query: {handler: adk.stream_query, description: Mine.}
  plain: {}
`)
	got := ClassMethods(cfg)
	if got[0].Description != "Answers." || !reflect.DeepEqual(got[0].Parameters, map[string]any{"type": "object", "required": []any{"message"}}) {
		t.Errorf("query = %+v", got[0])
	}
	if got[1].Description != adkAppDescription("async_stream_query") || got[1].Parameters["required"] == nil {
		t.Errorf("chat (adk.async_stream_query) = %+v, want AdkApp's async_stream_query", got[1])
	}
	if got[2].Description != adkAppDescription("async_create_session") {
		t.Errorf("new_session (adk.create_session) description %q, want the non-deprecated async_create_session's", got[2].Description)
	}
	if got[3].Description != "Mine." || got[3].Parameters == nil {
		t.Errorf("stream_query = %+v, want its own description and AdkApp's parameters", got[3])
	}
	if got[4].Description != "" || got[4].Parameters != nil {
		t.Errorf("plain = %+v, want neither", got[4])
	}
	// Each call gets its own maps: a caller's change does not leak.
	got[1].Parameters["x"] = 1
	if _, leaked := ClassMethods(cfg)[1].Parameters["x"]; leaked {
		t.Error("ClassMethods shares its parameters maps between calls")
	}
}

// adkAppDescription is the description of the AdkApp method called name.
func adkAppDescription(name string) string {
	for _, am := range adkapp.Methods {
		if am.Name == name {
			return am.Description
		}
	}
	return ""
}

// TestLabelChecks: the hand-written label checks accept exactly what
// Google Cloud's label rule, as a regexp, accepts.
func TestLabelChecks(t *testing.T) {
	keyRE := regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	valueRE := regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
	for _, s := range []string{"", "a", "team", "équipe", "日本", "a1_-", "1x", "_a", "-a", "Team", "aB", "a b", "a.b",
		"a٣", "\xff", "a\x00", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("é", 63), strings.Repeat("é", 64)} {
		if got, want := labelKey(s), keyRE.MatchString(s); got != want {
			t.Errorf("labelKey(%q) = %v, want %v", s, got, want)
		}
		if got, want := labelValue(s), valueRE.MatchString(s); got != want {
			t.Errorf("labelValue(%q) = %v, want %v", s, got, want)
		}
	}
}
