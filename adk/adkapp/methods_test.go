package adkapp

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMethods: the table names AdkApp's 14 methods once each, every one
// with a mode and a description, and parameters but for the conversation
// (bidi_stream_query, which classMethods leave out); parameters.json
// describes no other; rows that share a handler agree on its required
// inputs.
func TestMethods(t *testing.T) {
	if len(Methods) != 14 {
		t.Fatalf("Methods has %d rows, want AdkApp's 14", len(Methods))
	}
	var all map[string]map[string]any
	if err := json.Unmarshal(parameters, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 13 {
		t.Errorf("parameters.json describes %d methods, want AdkApp's 13", len(all))
	}
	names := map[string]bool{}
	required := map[string][]string{}
	for _, m := range Methods {
		if names[m.Name] {
			t.Errorf("%s: a second row", m.Name)
		}
		names[m.Name] = true
		if !slices.Contains([]string{"", "async", "stream", "async_stream", "bidi"}, m.Mode) {
			t.Errorf("%s: mode %q", m.Name, m.Mode)
		}
		if m.Mode == "bidi" {
			if m.Description == "" || all[m.Name] != nil {
				t.Errorf("AdkApp conversation %s: no description, or parameters classMethods would not declare", m.Name)
			}
		} else if m.Description == "" || all[m.Name] == nil || Parameters(m.Name) == nil {
			t.Errorf("AdkApp method %s: no description or parameters", m.Name)
		}
		if r, ok := required[m.Handler]; ok && !slices.Equal(r, m.Required) {
			t.Errorf("%s requires %v, but %s's first row requires %v", m.Name, m.Required, m.Handler, r)
		} else if !ok {
			required[m.Handler] = m.Required
		}
	}
	for n := range all {
		if !names[n] {
			t.Errorf("parameters.json describes %s, which Methods does not name", n)
		}
	}
	// Each call gets its own map: a caller's change does not leak.
	Parameters("get_session")["x"] = 1
	if _, leaked := Parameters("get_session")["x"]; leaked {
		t.Error("Parameters shares its maps between calls")
	}
}

// TestParameters re-derives AdkApp's parameters schemas as the platform's
// SDK does (pydantic, testdata/parameters.py) and compares them with
// parameters.json.
func TestParameters(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pydantic; assert pydantic.VERSION >= '2'").Run(); err != nil {
		t.Skip("python3 with pydantic 2 not installed")
	}
	out, err := exec.Command("python3", "testdata/parameters.py").Output()
	if err != nil {
		t.Fatalf("testdata/parameters.py: %v", err)
	}
	var got, want any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(parameters, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parameters.json differs from what pydantic derives; regenerate it:\n  python3 adk/adkapp/testdata/parameters.py > adk/adkapp/parameters.json\n%s", out)
	}
	names := map[string]bool{}
	for _, m := range Methods {
		names[m.Name] = true
	}
	for n := range got.(map[string]any) {
		if !names[n] {
			t.Errorf("testdata/parameters.py derives %s, which the ADK preset does not serve", n)
		}
	}
}
