package rawjson

import (
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	tests := []struct {
		obj  string
		want []string // key=value
		ok   bool
	}{
		{`{}`, nil, true},
		{` { "a" : 1 , "b":[1,{"c":"]}"}],"d\"":"x","e":{"f":{}} } `, []string{`"a"=1`, `"b"=[1,{"c":"]}"}]`, `"d\""="x"`, `"e"={"f":{}}`}, true},
		{`{"a":true,"b":null,"c":-1.5e3}`, []string{`"a"=true`, `"b"=null`, `"c"=-1.5e3`}, true},
		{`[]`, nil, false},
		{`{"a":1`, []string{`"a"=1`}, false},
		{`{"a" 1}`, nil, false},
		{`{"a":1}x`, []string{`"a"=1`}, false},
		{`{"a":[1}`, []string{`"a"=[1}`}, false}, // values are delimited, not checked
		{``, nil, false},
	}
	for _, tt := range tests {
		var got []string
		ok := Members([]byte(tt.obj), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return true
		})
		if ok != tt.ok || strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Members(%q) = %v %q, want %v %q", tt.obj, ok, got, tt.ok, tt.want)
		}
	}
	if !KeyIs([]byte(`"class\u005fmethod"`), "class_method") || KeyIs([]byte(`"Class_method"`), "class_method") {
		t.Errorf("KeyIs does not compare decoded keys exactly")
	}
}
