package platform

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// example is how a user calls the door: curl on the contract's unary
// route at base (the container's port), and the Vertex AI SDK calling
// the deployed engine, which calls the container's routes (docs/agent-platform.md).
func example(base string, _ *config.Door) core.Example {
	return core.Example{
		Curl: "curl -s " + base + core.RouteUnary + ` \
  -H 'Content-Type: application/json' \
  -d '{"class_method": "query", "input": {"message": "hi"}}'`,
		ClientLang: "python",
		Client: `# The deployed engine: the platform calls this container's routes.
import vertexai
from vertexai import agent_engines

vertexai.init(project="PROJECT_ID", location="us-central1")
remote = agent_engines.get("projects/PROJECT_ID/locations/us-central1/reasoningEngines/ENGINE_ID")
print(remote.query(message="hi"))
for event in remote.stream_query(message="hi"):
    print(event)
`,
	}
}
