package openai

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// example is how a user calls the door at base: curl (the model's id
// read from /v1/models first), and the openai Python client. Both send
// the key from the environment variables the section's api_key names,
// the ones the sidecar reads it from (no Authorization when the door
// takes no key).
func example(base string, door *config.Door) core.Example {
	written := ""
	if door != nil {
		if s, ok := door.Options.(*section); ok {
			written = s.APIKey
		}
	}
	auth, imports, key := "", "", `"none"` // the client wants a key even where the door takes none
	if written != "" {
		auth = ` -H "Authorization: Bearer ` + shellKey(written) + `"`
		imports, key = "import os\n", pythonKey(written)
	}
	return core.Example{
		Curl: fmt.Sprintf(`model=$(curl -s %[1]s/v1/models%[2]s | sed -E 's/.*"id":"([^"]*)".*/\1/')
curl -s %[1]s/v1/chat/completions%[2]s -H "Content-Type: application/json" \
  -d '{"model": "'"$model"'", "messages": [{"role": "user", "content": "Hello"}]}'`, base, auth),
		Client: fmt.Sprintf(`%sfrom openai import OpenAI

client = OpenAI(base_url="%s/v1", api_key=%s)
model = client.models.list().data[0].id
stream = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": "Hello"}],
    stream=True,
)
for chunk in stream:
    print(chunk.choices[0].delta.content or "", end="", flush=True)
`, imports, base, key),
		ClientLang: "python",
	}
}

// keyParts splits api_key as written into its literal text and its
// ${NAME} references, in order: parts[i] is a variable's name when ref[i].
func keyParts(written string) (parts []string, ref []bool) {
	at := 0
	for _, m := range envRef.FindAllStringSubmatchIndex(written, -1) {
		if m[0] > at {
			parts, ref = append(parts, written[at:m[0]]), append(ref, false)
		}
		parts, ref = append(parts, written[m[2]:m[3]]), append(ref, true)
		at = m[1]
	}
	if at < len(written) {
		parts, ref = append(parts, written[at:]), append(ref, false)
	}
	return parts, ref
}

// shellKey is api_key as the inside of a shell double-quoted string: its
// references expanded by the shell, its literal text as is.
func shellKey(written string) string {
	var b strings.Builder
	parts, ref := keyParts(written)
	for i, p := range parts {
		if ref[i] {
			b.WriteString("${" + p + "}")
			continue
		}
		for _, r := range p {
			if strings.ContainsRune("\\\"$`", r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pythonKey is api_key as a Python expression: os.environ["NAME"] for
// each reference (a KeyError naming it when unset, as the sidecar
// refuses to start), string literals between.
func pythonKey(written string) string {
	parts, ref := keyParts(written)
	exprs := make([]string, len(parts))
	for i, p := range parts {
		if ref[i] {
			exprs[i] = `os.environ["` + p + `"]`
		} else {
			exprs[i] = strconv.Quote(p)
		}
	}
	return strings.Join(exprs, " + ")
}
