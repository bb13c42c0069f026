package tracing

import (
	"net/url"
	"strings"
)

// The OTLP endpoint may carry credentials: a user and password
// (http://user:s3cr3t@collector) or a token in its query (?token=abc).
// Whatever the sidecar logs or quotes of it shows neither.

// redacted stands for a secret removed.
const redacted = "REDACTED"

// redact is u for a log line or an error: its userinfo and the values of
// its query replaced by REDACTED (the query's keys kept, to say which was
// set).
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	if r.User != nil {
		r.User = url.User(redacted)
	}
	if r.RawQuery != "" {
		q := r.Query()
		for k := range q {
			q[k] = []string{redacted}
		}
		r.RawQuery = q.Encode()
	}
	r.Fragment, r.RawFragment = "", ""
	return r.String()
}

// redactRaw is redact for an endpoint that does not parse: what lies
// between "//" and the last "@" before the path, and everything after
// the first "?" or "#", go.
func redactRaw(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i] + "?" + redacted
	}
	scheme, rest, ok := strings.Cut(s, "//")
	if !ok {
		return s
	}
	host := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host = rest[:i]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		rest = redacted + rest[i:]
	}
	return scheme + "//" + rest
}

// secretsOf lists the secrets of u as they may appear in an error's text:
// the user, the password and each query value, raw and escaped.
func secretsOf(u *url.URL) []string {
	if u == nil {
		return nil
	}
	var l []string
	add := func(s string, min int) {
		if len(s) >= min {
			l = append(l, s, url.QueryEscape(s), url.PathEscape(s))
		}
	}
	if u.User != nil {
		add(u.User.Username(), 1)
		p, _ := u.User.Password()
		add(p, 1)
	}
	// A query value of one or two characters ("?v=1") is no secret, and
	// hiding it would garble the message (every "1" of "status 401").
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v, 3)
		}
	}
	return l
}

// hide is s with every secret replaced by REDACTED.
func hide(s string, secrets []string) string {
	for _, x := range secrets {
		s = strings.ReplaceAll(s, x, redacted)
	}
	return s
}
