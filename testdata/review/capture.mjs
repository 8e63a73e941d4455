// Captures an MCP server's tools/list (and prompts/list, resources/list)
// answer over stdio, for the benign corpus. Run from a directory where the
// server and @modelcontextprotocol/sdk are installed, outside the repository:
//
//   npm install @modelcontextprotocol/sdk @playwright/mcp
//   node capture.mjs node node_modules/@playwright/mcp/cli.js > out.json
//
// The server gets a minimal environment with placeholder tokens: listing
// needs none, and no real secret should reach a captured file.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const [cmd, ...args] = process.argv.slice(2);
const env = { PATH: process.env.PATH, HOME: process.env.CAPTURE_HOME || "/tmp", MEMORY_FILE_PATH: "/tmp/capture-memory.jsonl", GITHUB_PERSONAL_ACCESS_TOKEN: "x", NOTION_TOKEN: "x", GOOGLE_MAPS_API_KEY: "x", EVERART_API_KEY: "x", GITLAB_PERSONAL_ACCESS_TOKEN: "x", FIRECRAWL_API_KEY: "fc-x", EXA_API_KEY: "x", TAVILY_API_KEY: "tvly-x", AWS_ACCESS_KEY_ID: "x", AWS_SECRET_ACCESS_KEY: "x", AWS_REGION: "us-east-1", SENTRY_ACCESS_TOKEN: "x", STRIPE_SECRET_KEY: "sk_test_x", REDIS_URL: "redis://127.0.0.1:1", CLOUDFLARE_API_TOKEN: "x", CLOUDFLARE_ACCOUNT_ID: "x", HEROKU_API_KEY: "x", PRIVATE_APP_ACCESS_TOKEN: "x", LINEAR_API_TOKEN: "x" };
const t = new StdioClientTransport({ command: cmd, args, env, stderr: "ignore" });
const c = new Client({ name: "dump", version: "0" });
await c.connect(t);
const out = { server: c.getServerVersion(), tools: [], prompts: [], resources: [], resourceTemplates: [] };
let cursor;
do { const r = await c.listTools({ cursor }); out.tools.push(...r.tools); cursor = r.nextCursor; } while (cursor);
const caps = c.getServerCapabilities() || {};
if (caps.prompts) { try { out.prompts = (await c.listPrompts()).prompts; } catch {} }
if (caps.resources) { try { out.resources = (await c.listResources()).resources; } catch {} try { out.resourceTemplates = (await c.listResourceTemplates()).resourceTemplates; } catch {} }
process.stdout.write(JSON.stringify(out, null, 2));
await c.close();
process.exit(0);
