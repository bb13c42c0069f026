package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// envRef is a ${NAME} reference to the environment, in a header value
// (headers.set) or a URL.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv is s with its ${NAME} references taken from the environment;
// an unset variable, or a "${" that is no reference, is an error naming
// it.
func expandEnv(s string) (string, error) {
	var missing []string
	expanded := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	if strings.Contains(envRef.ReplaceAllString(s, ""), "${") {
		return "", fmt.Errorf("a \"${\" that is no reference (want \"${NAME}\", e.g. \"${AGENT_URL}\")")
	}
	return expanded, nil
}

// url is e's text with its ${NAME} references expanded (expandEnv), for
// a URL the file configures: ok is false for a null, and for a value
// that is no single text or names an unset variable (a problem).
func (p *parser) url(e entry, path string) (string, bool) {
	s, ok := p.scalar(e, path)
	if !ok {
		return "", false
	}
	s, err := expandEnv(s)
	if err != nil {
		p.addf(e.val.Line, path, "%v", err)
		return "", false
	}
	return s, true
}

// URL is e's text with its ${NAME} references taken from the
// environment, for a URL a door's section configures: ok is false for a
// null (no problem), and for a mapping or list or an unset variable (a
// problem).
func (d Decoder) URL(e Entry, path string) (string, bool) { return d.p.url(e.entry(), path) }
