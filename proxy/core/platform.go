package core

import (
	"errors"
	"regexp"
	"strings"
)

// The variables Agent Platform injects into the container (PROTOCOLS.md
// §1.9): the engine's id (the bare number), its region and the project.
// They are the platform's: the sidecar reads them, and never sets,
// overwrites or logs them.
const (
	EnvEngineID       = "GOOGLE_CLOUD_AGENT_ENGINE_ID"
	EnvEngineLocation = "GOOGLE_CLOUD_AGENT_ENGINE_LOCATION"
	EnvProject        = "GOOGLE_CLOUD_PROJECT"
)

// What each variable must be to go into a URL: the location is a host
// name's label ({LOCATION}-aiplatform.googleapis.com); the project an id
// (my-project), a number or a domain-scoped id (example.com:my-project);
// the engine's id a number or a lowercase id. Anything else (a "/", a
// "?", a space, an upper-case letter) would make a URL that names
// another resource, or none.
var (
	locationToken = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)
	projectToken  = regexp.MustCompile(`^[a-z0-9]([a-z0-9.:-]{0,98}[a-z0-9])?$`)
	engineToken   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// PlatformBase is the public URL at which Agent Platform's generic
// passthrough reaches the root of the container's one listener:
//
//	https://{LOCATION}-aiplatform.googleapis.com/reasoningEngines/v1/projects/{PROJECT}/locations/{LOCATION}/reasoningEngines/{ID}/api
//
// (…/api/{path} reaches /{path}), from the variables the platform
// injects, read with getenv: a door mounted at /a2a is at base + "/a2a"
// for its clients. It is "" and no error where the sidecar is not on
// Agent Platform (neither the engine's id nor its location is set; the
// project alone is set in many other places), and "" and an error when
// they are set but one is missing or not a plain token: the error names
// the variables, never their values. A nil getenv is no environment.
func PlatformBase(getenv func(string) string) (string, error) {
	if getenv == nil {
		return "", nil
	}
	id, location, project := getenv(EnvEngineID), getenv(EnvEngineLocation), getenv(EnvProject)
	if id == "" && location == "" {
		return "", nil
	}
	var errs []string
	for _, v := range []struct {
		name, value string
		token       *regexp.Regexp
		want        string
	}{
		{EnvEngineID, id, engineToken, "the engine's id, e.g. 1234567890"},
		{EnvEngineLocation, location, locationToken, "a region, e.g. us-central1"},
		{EnvProject, project, projectToken, "a project id or number, e.g. my-project"},
	} {
		switch {
		case v.value == "":
			errs = append(errs, v.name+" is unset")
		case !v.token.MatchString(v.value):
			// Not the value: it is the platform's, and a log line is not
			// the place for it.
			errs = append(errs, v.name+" is not a plain token (want "+v.want+")")
		}
	}
	if len(errs) > 0 {
		return "", errors.New("reading the platform's variables: " + strings.Join(errs, "; "))
	}
	return "https://" + location + "-aiplatform.googleapis.com/reasoningEngines/v1/projects/" + project +
		"/locations/" + location + "/reasoningEngines/" + id + "/api", nil
}
