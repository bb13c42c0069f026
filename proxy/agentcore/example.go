package agentcore

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// example is how a user calls the door: curl on POST /invocations at
// base, and boto3 invoking the deployed runtime, which calls the
// container's /invocations (docs/agentcore.md).
func example(base string, _ *config.Door) core.Example {
	return core.Example{
		Curl: "curl -sN " + base + `/invocations \
  -H 'Content-Type: application/json' \
  -H 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: s-0123456789abcdef0123456789abcdef' \
  -d '{"message": "hi"}'`,
		ClientLang: "python",
		Client: `# The deployed runtime: AgentCore calls this container's /invocations.
import json
import uuid

import boto3

client = boto3.client("bedrock-agentcore", region_name="us-east-1")
resp = client.invoke_agent_runtime(
    agentRuntimeArn="arn:aws:bedrock-agentcore:us-east-1:ACCOUNT_ID:runtime/RUNTIME_ID",
    runtimeSessionId=str(uuid.uuid4()),  # at least 33 characters
    payload=json.dumps({"message": "hi"}).encode(),
)
for line in resp["response"].iter_lines():  # a streaming method: SSE lines
    if line:
        print(line.decode())
`,
	}
}
