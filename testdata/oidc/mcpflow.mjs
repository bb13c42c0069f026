// What testdata/mcp/oauth.mjs and testdata/mcp2/oauth.mjs share: an MCP
// session through the sidecar's protected MCP door by an SDK's client with
// the SDK's own OAuth client credentials provider, given the SDK's classes
// (each script finds its SDK through NODE_PATH). It starts with no token:
// the SDK must take the door's 401, read the challenge's
// resource_metadata, fetch that RFC 9728 document, find the authorization
// server in it, discover the server's token endpoint, ask it for a token for
// the document's resource, and retry.
//
// args: <endpoint URL> <issuer> <client id> <client secret> <scope>
// clientOptions: the Client's options (2.x: its version negotiation).
// Prints one JSON line per step: connect (the protocol version, the
// server's name, the token's type and claims), tools, ask, whoami (what the
// agent saw: the whoami tool echoes its request's headers), fail (a tool
// that needs the scope agent:admin), and fetched: every HTTP request the
// SDK made, "METHOD URL STATUS", in order. A step that throws prints its
// error's message.
export async function run({ Client, StreamableHTTPClientTransport, ClientCredentialsProvider }, args, clientOptions = {}) {
  const [url, issuer, clientId, clientSecret, scope] = args;
  const out = (v) => console.log(JSON.stringify(v));
  const fetched = [];
  const recording = async (input, init) => {
    const res = await fetch(input, init);
    fetched.push(`${init?.method ?? "GET"} ${input instanceof Request ? input.url : String(input)} ${res.status}`);
    return res;
  };
  const step = async (name, f) => {
    try {
      out({ step: name, ...(await f()) });
    } catch (e) {
      out({ step: name, error: String(e?.message ?? e) });
    }
  };

  const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope: scope || undefined, expectedIssuer: issuer });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider, fetch: recording });
  const client = new Client({ name: "sidecar-oauth-test", version: "1.0.0" }, clientOptions);
  await step("connect", async () => {
    await client.connect(transport);
    const token = authProvider.tokens()?.access_token ?? "";
    const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString() || "{}");
    return { version: client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion, server: client.getServerVersion()?.name, token_type: authProvider.tokens()?.token_type,
      aud: claims.aud, sub: claims.sub, scope: claims.scope ?? null };
  });
  await step("tools", async () => ({ tools: (await client.listTools()).tools.map((t) => t.name) }));
  await step("ask", async () => {
    const r = await client.callTool({ name: "ask", arguments: { message: "what is up" } });
    return { text: r.content[0].text, isError: r.isError ?? false };
  });
  await step("whoami", async () => {
    const r = await client.callTool({ name: "whoami", arguments: {} });
    return { seen: r.structuredContent ?? JSON.parse(r.content[0].text), isError: r.isError ?? false };
  });
  await step("fail", async () => {
    const r = await client.callTool({ name: "fail", arguments: {} });
    return { text: r.content[0].text, isError: r.isError ?? false };
  });
  await client.close();
  out({ step: "fetched", requests: fetched });
}
