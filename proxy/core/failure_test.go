package core

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReasonToken: an agent's own code becomes a valid ErrorInfo reason.
func TestReasonToken(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Z][A-Z0-9_]+[A-Z0-9]$`)
	tests := []struct{ in, want string }{
		{"timeout", "TIMEOUT"},
		{"modelOverloaded", "MODEL_OVERLOADED"},
		{"model-overloaded", "MODEL_OVERLOADED"},
		{"Model Overloaded!", "MODEL_OVERLOADED"},
		{"HTTPError", "HTTPERROR"},
		{"v2Error", "V2_ERROR"},
		{"429", "AGENT_ERROR_429"},
		{"-1", "AGENT_ERROR_1"},
		{"x", "AGENT_ERROR_X"},
		{"", "AGENT_ERROR"},
		{"!!!", "AGENT_ERROR"},
		{"_a_", "AGENT_ERROR_A"},
		{"ünïcode", "N_CODE"},
		{"a\nb", "A_B"},
		{strings.Repeat("ab", 100), strings.Repeat("AB", 31) + "A"},
		{strings.Repeat("a_", 100), strings.TrimSuffix(strings.Repeat("A_", 32), "_")},
		{"1" + strings.Repeat("z", 100), "AGENT_ERROR_1" + strings.Repeat("Z", 50)},
	}
	for _, tt := range tests {
		got := reasonToken(tt.in)
		if got != tt.want {
			t.Errorf("reasonToken(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > 63 || !valid.MatchString(got) {
			t.Errorf("reasonToken(%q) = %q, not a valid reason", tt.in, got)
		}
	}
}

// TestReasonsTable: every reason's line is a code and status Google's
// error model pairs, and the reasons table of docs/errors.md shows each one
// as the code's table does.
func TestReasonsTable(t *testing.T) {
	readme, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
			if _, dup := rows[name]; !dup {
				rows[name] = l
			}
		}
	}
	for reason, r := range reasons {
		row, ok := rows[reason]
		if !ok {
			t.Errorf("docs/errors.md: the reasons table has no row for %s", reason)
			continue
		}
		cells := strings.Split(row, "|")
		if len(cells) != 6 {
			t.Errorf("docs/errors.md: row %q does not have 4 cells", row)
			continue
		}
		if r.Status != 0 && !strings.Contains(cells[2], strconv.Itoa(r.Status)) {
			t.Errorf("docs/errors.md: row for %s: before the first byte %q, want %d", reason, cells[2], r.Status)
		}
		if r.Line.Code != 0 && r.Line.Code != 499 && !strings.Contains(cells[3], fmt.Sprintf("%d `%s`", r.Line.Code, r.Line.Status)) {
			t.Errorf("docs/errors.md: row for %s: line %q, want %d `%s`", reason, cells[3], r.Line.Code, r.Line.Status)
		}
		if !strings.Contains(cells[4], "`"+string(r.Outcome)+"`") {
			t.Errorf("docs/errors.md: row for %s: outcome %q, want %s", reason, cells[4], r.Outcome)
		}
		if r.Line.Code != 0 && rpcOfStatus(r.Line.Code) != r.Line {
			t.Errorf("reason %s: line %v is not a pair of Google's error model (%v)", reason, r.Line, rpcOfStatus(r.Line.Code))
		}
	}
}
