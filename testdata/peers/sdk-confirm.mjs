// A downstream client built on the official TypeScript SDK that makes a
// sequence of tool calls over one session, for toolgate's confirm-gate
// tests. It connects to a Streamable HTTP endpoint, lists the tools, makes
// the calls in order and prints a single JSON object on stdout:
//
//   {"server": …, "sessionId": …, "tools": […], "results": [R, …]}
//
// where each R is {"result": CallToolResult} or {"error": …, "code": …}.
// A failed call does not stop the ones after it.
//
//   SDK_CLIENT_TOKEN=… node sdk-confirm.mjs URL CALLS_JSON
//
// CALLS_JSON is an array of {"name": TOOL, "arguments": {…}}. An argument
// whose value is the string "$confirmToken:N" is replaced by the
// confirmToken in the structuredContent of call N's result (0-based), so a
// preview and its confirmation fit in one run. Argument keys are sent in
// the order given.
//
// SDK_CLIENT_TOKEN, when set, is sent as "Authorization: Bearer …" on every
// request (kept out of argv). A failure to connect or list prints
// {"error": …} and exits 1.
//
// It resolves the SDK from the node_modules beside it: keep it in
// testdata/peers, installed with `npm ci`.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, rawCalls] = process.argv.slice(2);
if (!url || !rawCalls) {
  console.error('usage: node sdk-confirm.mjs URL CALLS_JSON');
  process.exit(2);
}
const calls = JSON.parse(rawCalls);

const token = process.env.SDK_CLIENT_TOKEN;
const requestInit = token ? { headers: { Authorization: 'Bearer ' + token } } : undefined;
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
const client = new Client({ name: 'toolgate-sdk-confirm-client', version: '1.0.0' });

function failure(err) {
  return {
    error: String(err && err.message ? err.message : err),
    code: err && typeof err.code !== 'undefined' ? err.code : null,
  };
}

// resolve replaces "$confirmToken:N" values with call N's token.
function resolve(args, results) {
  const out = {};
  for (const [k, v] of Object.entries(args ?? {})) {
    const m = typeof v === 'string' ? /^\$confirmToken:(\d+)$/.exec(v) : null;
    if (m) {
      const prior = results[Number(m[1])];
      const tok = prior && prior.result && prior.result.structuredContent && prior.result.structuredContent.confirmToken;
      if (typeof tok !== 'string') {
        throw new Error(`call ${m[1]} returned no confirmToken`);
      }
      out[k] = tok;
    } else {
      out[k] = v;
    }
  }
  return out;
}

const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.sessionId = transport.sessionId ?? null;
  out.tools = (await client.listTools()).tools;
} catch (err) {
  Object.assign(out, failure(err));
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(1);
}

out.results = [];
for (const call of calls) {
  try {
    const args = resolve(call.arguments, out.results);
    out.results.push({ result: await client.callTool({ name: call.name, arguments: args }) });
  } catch (err) {
    out.results.push(failure(err));
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
