package core

import (
	"strings"
	"testing"
)

// TestPlatformBase: the platform's variables give the passthrough's
// public URL; off the platform there is none and no error; a missing or
// unplain value gives none and an error naming the variable, never the
// value.
func TestPlatformBase(t *testing.T) {
	const want = "https://europe-west4-aiplatform.googleapis.com/reasoningEngines/v1/projects/my-proj/locations/europe-west4/reasoningEngines/1234567890/api"
	on := map[string]string{EnvEngineID: "1234567890", EnvEngineLocation: "europe-west4", EnvProject: "my-proj"}
	with := func(name, value string) map[string]string {
		m := map[string]string{}
		for k, v := range on {
			m[k] = v
		}
		m[name] = value
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
		errs []string // what the error names; "" when none
	}{
		{"on the platform", on, want, nil},
		{"a number for the project", with(EnvProject, "123456789012"), strings.Replace(want, "my-proj", "123456789012", 1), nil},
		{"a domain-scoped project", with(EnvProject, "example.com:proj"), strings.Replace(want, "my-proj", "example.com:proj", 1), nil},
		{"nothing set", nil, "", nil},
		{"only the project (Cloud Run, a laptop)", map[string]string{EnvProject: "my-proj"}, "", nil},
		{"no location", with(EnvEngineLocation, ""), "", []string{EnvEngineLocation + " is unset"}},
		{"no project", with(EnvProject, ""), "", []string{EnvProject + " is unset"}},
		{"a path in the id", with(EnvEngineID, "1/../../x"), "", []string{EnvEngineID + " is not a plain token"}},
		{"a host in the location", with(EnvEngineLocation, "evil.example/x"), "", []string{EnvEngineLocation + " is not a plain token"}},
		{"a query in the project", with(EnvProject, "p?alt=x"), "", []string{EnvProject + " is not a plain token"}},
		{"a space and a newline", with(EnvProject, "p q\n"), "", []string{EnvProject + " is not a plain token"}},
		{"upper case", with(EnvEngineLocation, "US-CENTRAL1"), "", []string{EnvEngineLocation + " is not a plain token"}},
		{"two bad", map[string]string{EnvEngineID: "a b", EnvEngineLocation: "x_y", EnvProject: "my-proj"}, "",
			[]string{EnvEngineID + " is not a plain token", EnvEngineLocation + " is not a plain token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlatformBase(func(name string) string { return tt.env[name] })
			if got != tt.want {
				t.Errorf("PlatformBase = %q, want %q", got, tt.want)
			}
			if (err != nil) != (tt.errs != nil) {
				t.Fatalf("PlatformBase error = %v, want one naming %q", err, tt.errs)
			}
			if err == nil {
				return
			}
			for _, w := range tt.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for name, v := range tt.env {
				if v != "" && tt.env[name] != on[name] && strings.Contains(err.Error(), v) {
					t.Errorf("error %q carries %s's value %q", err, name, v)
				}
			}
		})
	}
	if got, err := PlatformBase(nil); got != "" || err != nil {
		t.Errorf("PlatformBase(nil) = %q, %v", got, err)
	}
}
