package deploy

import (
	"reflect"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

func TestClassMethods(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte(`
upstream: {url: "http://127.0.0.1:1"}
methods:
  "*": {mode: stream}
  stream_query: {mode: async_stream}
  query: {}
  create_session: {mode: async}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []ClassMethod{{Name: "stream_query", APIMode: "async_stream"}, {Name: "query", APIMode: ""}, {Name: "create_session", APIMode: "async"}}
	if got := ClassMethods(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("ClassMethods = %v, want %v (file order, no \"*\")", got, want)
	}
}

// TestClassMethodsLeaveOutBidi: a conversation is no class method (the
// container side of the platform's bidi_stream route is unpublished).
func TestClassMethodsLeaveOutBidi(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods:\n  query: {}\n  converse: {mode: bidi, call: GET /live}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ClassMethods(cfg); len(got) != 1 || got[0].Name != "query" {
		t.Errorf("ClassMethods = %+v, want query only", got)
	}
}
