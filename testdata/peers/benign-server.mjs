// An MCP stdio server built on the official TypeScript SDK that serves the
// real tool definitions of one file of testdata/review/benign as they were
// captured, for tests of a gateway in front of many real definitions.
//
//   node benign-server.mjs FILE [MORE_FILE MARKER]
//
// tools/list answers FILE's tools verbatim; tools/call answers one text
// block, "NAME ran with ARGS-JSON", without doing anything. With MORE_FILE
// and MARKER, once the file MARKER exists the tools of MORE_FILE are added
// and notifications/tools/list_changed is sent (a test makes the upstream's
// list change by creating MARKER).
import fs from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [file, moreFile, marker] = process.argv.slice(2);
if (!file) {
  console.error('usage: node benign-server.mjs FILE [MORE_FILE MARKER]');
  process.exit(2);
}
const read = (f) => JSON.parse(fs.readFileSync(f, 'utf8')).tools;
let tools = read(file);

const server = new Server({ name: 'benign-' + file.split('/').pop(), version: '1.0.0' },
  { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const name = req.params.name;
  if (!tools.some((t) => t.name === name)) {
    return { content: [{ type: 'text', text: 'no such tool: ' + name }], isError: true };
  }
  return { content: [{ type: 'text', text: name + ' ran with ' + JSON.stringify(req.params.arguments ?? {}) }] };
});

await server.connect(new StdioServerTransport());

if (moreFile && marker) {
  const timer = setInterval(async () => {
    if (!fs.existsSync(marker)) return;
    clearInterval(timer);
    tools = tools.concat(read(moreFile));
    await server.sendToolListChanged();
  }, 100);
  // The poll must not keep a server whose client left alive.
  process.stdin.on('close', () => clearInterval(timer));
}
