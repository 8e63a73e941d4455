// A downstream client built on the official TypeScript SDK, for toolgate's
// tests: it connects to a Streamable HTTP endpoint, lists the tools, calls
// one, and prints a single JSON object on stdout.
//
//   SDK_CLIENT_TOKEN=… node sdk-client.mjs URL [TOOL [ARGS_JSON]] [--terminate]
//
// SDK_CLIENT_TOKEN, when set, is sent as "Authorization: Bearer …" on every
// request (kept out of argv). --terminate ends the session with DELETE
// before closing. Any failure prints {"error": …} and exits 1.
//
// It resolves the SDK from the node_modules beside it: keep it in
// testdata/peers, installed with `npm ci`.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const argv = process.argv.slice(2);
const terminate = argv.includes('--terminate');
const [url, tool, rawArgs] = argv.filter((a) => a !== '--terminate');
if (!url) {
  console.error('usage: node sdk-client.mjs URL [TOOL [ARGS_JSON]] [--terminate]');
  process.exit(2);
}

const token = process.env.SDK_CLIENT_TOKEN;
const requestInit = token ? { headers: { Authorization: 'Bearer ' + token } } : undefined;
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
const client = new Client({ name: 'toolgate-sdk-test-client', version: '1.0.0' });

const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.instructions = client.getInstructions() ?? null;
  out.protocolVersion = transport.protocolVersion ?? null;
  out.sessionId = transport.sessionId ?? null;
  out.tools = (await client.listTools()).tools;
  if (tool) {
    out.call = await client.callTool({ name: tool, arguments: rawArgs ? JSON.parse(rawArgs) : {} });
  }
  if (terminate) {
    await transport.terminateSession();
    out.terminated = transport.sessionId === undefined;
  }
  await client.close();
} catch (err) {
  out.error = String(err && err.message ? err.message : err);
  out.code = err && typeof err.code !== 'undefined' ? err.code : null;
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(1);
}
process.stdout.write(JSON.stringify(out) + '\n');
