package rawjson

import "strings"

// Snake turns a member name in camelCase, as JSON writes it (the Agent
// Platform REST API's, the ADK api servers'), into the snake_case that the
// same field carries in proto and in AdkApp ("invocationId" →
// "invocation_id"): each capital becomes an underscore (none before a
// leading capital) and its lower case letter. A name without capitals is
// returned as it is, without allocating.
func Snake(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' }) < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
