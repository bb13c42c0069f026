package a2a

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// TestCardModes: card.input_modes and card.output_modes are the card's
// defaultInputModes and defaultOutputModes and its skill's, so that a
// client that reads them sends the files the agent takes; without them
// the card says text in, text and JSON out. A list that is not media
// types is refused saying why.
func TestCardModes(t *testing.T) {
	parse := func(section string) (*config.Config, error) {
		return config.Parse("t.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\nprotocols:\n  a2a: "+section+"\n"), Protocol.Kind)
	}
	cardOf := func(cfg *config.Config) card {
		t.Helper()
		var c card
		if err := json.Unmarshal(httpRecorder(newDoor(t, cfg, *cfg.Protocols.Door(Name).Options.(*Options)), http.MethodGet, RouteCard), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}

	cfg, err := parse(`{method: query, card: {input_modes: [text/plain, image/png, "image/*", application/pdf], output_modes: [text/plain, "*/*"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := cardOf(cfg)
	in, out := []string{"text/plain", "image/png", "image/*", "application/pdf"}, []string{"text/plain", "*/*"}
	if !slices.Equal(c.DefaultInputModes, in) || !slices.Equal(c.DefaultOutputModes, out) ||
		len(c.Skills) != 1 || !slices.Equal(c.Skills[0].InputModes, in) || !slices.Equal(c.Skills[0].OutputModes, out) {
		t.Errorf("card modes: default %v %v, skills %+v; want %v and %v", c.DefaultInputModes, c.DefaultOutputModes, c.Skills, in, out)
	}
	printed := cfg.Expanded()
	again, err := config.Parse("again.yaml", printed, Protocol.Kind)
	if err != nil || !slices.Equal(again.Protocols.Door(Name).Options.(*Options).Card.OutputModes, out) {
		t.Errorf("the expanded map, parsed again: %v; want the modes as given:\n%s", err, printed)
	}

	cfg, err = parse(`{method: query, card: {name: Plain}}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := cardOf(cfg); !slices.Equal(c.DefaultInputModes, []string{"text/plain"}) || !slices.Equal(c.DefaultOutputModes, []string{"text/plain", "application/json"}) {
		t.Errorf("default modes: %v %v", c.DefaultInputModes, c.DefaultOutputModes)
	}

	for _, tt := range []struct{ modes, want string }{
		{`[]`, "an empty list"},
		{`text/plain`, "want a list of media types"},
		{`[text]`, `"text" is not a media type`},
		{`["text/plain; charset=utf-8"]`, "is not a media type"},
		{`["*/png"]`, `"*/png" is not a media type`},
		{`[image/png, image/png]`, `"image/png" is listed twice`},
		{`["image/p ng"]`, "is not a media type"},
	} {
		_, err := parse(`{method: query, card: {input_modes: ` + tt.modes + `}}`)
		if err == nil || !strings.Contains(err.Error(), "protocols.a2a.card.input_modes") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("input_modes: %s = %v, want an error naming the key and saying %q", tt.modes, err, tt.want)
		}
	}
	if _, err := parse(`{method: query, card: {modes: [text/plain]}}`); err == nil || !strings.Contains(err.Error(), "input_modes") {
		t.Errorf("an unknown card key = %v, want one naming the keys there are", err)
	}
}
