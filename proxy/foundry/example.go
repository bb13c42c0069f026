package foundry

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// example is how a user calls the door: curl on POST /invocations at
// base with a session, and the same call from Python. The invocations
// protocol is plain HTTP (docs/foundry.md): the snippet uses Python's
// standard library, no SDK.
func example(base string, _ *config.Door) core.Example {
	return core.Example{
		Curl: "curl -s '" + base + `/invocations?agent_session_id=s1' \
  -H 'Content-Type: application/json' \
  -d '{"message": "hi"}'`,
		ClientLang: "python",
		Client: `# The invocations protocol is plain HTTP: Python's standard library calls it.
import json
import urllib.request

req = urllib.request.Request(
    "` + base + `/invocations?agent_session_id=s1",
    data=json.dumps({"message": "hi"}).encode(),
    headers={"Content-Type": "application/json"},
)
with urllib.request.urlopen(req) as resp:
    print(resp.headers["x-agent-session-id"], resp.read().decode())
`,
	}
}
