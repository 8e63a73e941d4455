// A downstream client built on the official TypeScript SDK, driven one
// call at a time over stdin, for toolgate's replica topology test: the
// test decides what comes next after each answer (a replica killed, an
// operator approving), all on one MCP session.
//
//   SDK_CLIENT_TOKEN=… node sdk-driver.mjs URL
//
// It connects, lists the tools and prints one line:
//
//   {"ready": true, "sessionId": …, "tools": [NAME, …]}
//
// then reads one JSON object per line on stdin, {"name": TOOL,
// "arguments": {…}}, makes that call and prints one line per call:
//
//   {"result": CallToolResult, "sessionId": …}  or  {"error": …, "code": …, "sessionId": …}
//
// End of stdin closes the client and exits 0. A failure to connect or list
// prints {"error": …} and exits 1. SDK_CLIENT_TOKEN is sent as
// "Authorization: Bearer …" on every request (kept out of argv).
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url] = process.argv.slice(2);
if (!url) {
  console.error('usage: node sdk-driver.mjs URL');
  process.exit(2);
}
const token = process.env.SDK_CLIENT_TOKEN;
const requestInit = token ? { headers: { Authorization: 'Bearer ' + token } } : undefined;
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
const client = new Client({ name: 'toolgate-sdk-driver', version: '1.0.0' });
// A broken GET stream (its replica killed) is reported here and retried by
// the transport; calls go on.
transport.onerror = (err) => console.error('transport:', String(err && err.message ? err.message : err));

function failure(err) {
  return {
    error: String(err && err.message ? err.message : err),
    code: err && typeof err.code !== 'undefined' ? err.code : null,
  };
}

try {
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  process.stdout.write(JSON.stringify({ ready: true, sessionId: transport.sessionId ?? null, tools }) + '\n');
} catch (err) {
  process.stdout.write(JSON.stringify(failure(err)) + '\n');
  process.exit(1);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let out;
  try {
    const call = JSON.parse(line);
    // A call waiting for an operator may take minutes (CF-5).
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, { timeout: 180000 });
    out = { result };
  } catch (err) {
    out = failure(err);
  }
  out.sessionId = transport.sessionId ?? null;
  process.stdout.write(JSON.stringify(out) + '\n');
}
await client.close();
