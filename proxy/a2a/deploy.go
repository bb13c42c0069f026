package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/sidecar-dev/sidecar/config"
)

// deployCard is the card `sidecar deploy-request --a2a` declares
// (core.Protocol.DeployCard): the one the mounted door serves (CardOf),
// advertising cardURL, else protocols.a2a.url, else the local URL
// `sidecar a2a-card` prints, and the advice for it. It is read with no
// environment: the request depends on the map and the flags only, and
// the engine's id, which the platform's URL of the mount needs, exists
// only once the engine is created.
func deployCard(cfg *config.Config, cardURL string) (json.RawMessage, []string, error) {
	door := cfg.Protocols.Door(Name)
	switch {
	case door == nil:
		return nil, nil, errors.New("--a2a: the config has no protocols.a2a, the door whose card it declares")
	case door.Mount == "":
		return nil, nil, fmt.Errorf("--a2a: protocols.a2a listens on its own port (%s), which Agent Platform never calls: it calls one port; mount the door on it (mount: /a2a)", door.Listen)
	}
	if cardURL != "" {
		if u, err := url.Parse(cardURL); err != nil || !u.IsAbs() || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, nil, fmt.Errorf("--a2a-url %q: not an http or https URL", cardURL)
		}
	}
	card, err := CardOf(cfg, cardURL, func(string) string { return "" })
	if err != nil {
		return nil, nil, fmt.Errorf("--a2a: building the card: %w", err)
	}
	var warnings []string
	if door.Mount != templateMount {
		warnings = append(warnings, fmt.Sprintf("--a2a: protocols.a2a is mounted at %s, not %s, where Google's A2A template serves its routes (what the platform's managed A2A path would reach, if it reaches a custom container at all)", door.Mount, templateMount))
	}
	var c struct{ URL string }
	json.Unmarshal(card, &c)
	if u, err := url.Parse(c.URL); err == nil && u.Hostname() == "localhost" {
		warnings = append(warnings, fmt.Sprintf("--a2a: the card advertises %s (no --a2a-url, no protocols.a2a.url): once the engine exists, update it with --a2a-url set to its passthrough URL, https://LOCATION-aiplatform.googleapis.com/reasoningEngines/v1/projects/PROJECT/locations/LOCATION/reasoningEngines/ID/api%s", c.URL, door.Mount))
	}
	return card, warnings, nil
}

// templateMount is the path prefix of Google's A2A template's routes.
const templateMount = "/a2a"
