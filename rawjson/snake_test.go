package rawjson

import "testing"

func TestSnake(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"labels", "labels"},
		{"already_snake", "already_snake"},
		{"invocationId", "invocation_id"},
		{"longRunningToolIds", "long_running_tool_ids"},
		{"secretEnv", "secret_env"},
		{"Leading", "leading"},
		{"Ärger", "Ärger"}, // only ASCII capitals are renamed
		{"cityÄnd", "cityÄnd"},
		{"aB", "a_b"},
	}
	for _, tt := range tests {
		if got := Snake(tt.in); got != tt.want {
			t.Errorf("Snake(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSnakeKeepsLowerCaseWithoutAllocating(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Snake("deployment_spec") }); n != 0 {
		t.Errorf("Snake of a lower case name: %v allocs, want 0", n)
	}
}
