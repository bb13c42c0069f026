package a2a

import (
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// example is how a user calls the door: curl sending a message/send at
// base, and the A2A project's JavaScript SDK (@a2a-js/sdk 1.x, the
// client TestJSClient runs) reading the card and sending a message as
// an A2A 1.0 client (docs/a2a.md). The SDK is given the card's whole URL:
// from a base URL it reads the card at the host's root, which a mounted
// door's is not.
func example(base string, _ *config.Door) core.Example {
	return core.Example{
		Curl: "curl -s " + base + `/ -H 'Content-Type: application/json' -d '{"jsonrpc": "2.0", "id": 1,
  "method": "message/send", "params": {"message": {"kind": "message", "role": "user",
  "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}}'`,
		ClientLang: "javascript",
		Client: `// npm install @a2a-js/sdk; run as an ES module (node example.mjs)
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";

// The card's whole URL: given a base, the SDK looks at the host's root.
const client = await new ClientFactory().createFromUrl("` + base + RouteCard + `", "");
const task = await client.sendMessage({
  message: {
    messageId: crypto.randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: "hi" }, filename: "", mediaType: "" }],
    extensions: [], referenceTaskIds: [],
  },
  tenant: "",
});
for (const artifact of task.artifacts ?? []) {
  console.log(artifact.parts.map((p) => p.content?.value).join(""));
}
`,
	}
}
