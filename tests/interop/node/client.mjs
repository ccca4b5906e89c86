// A minimal third-party client: the official TypeScript SDK over stdio.
// Usage: node client.mjs TOOL ARGS_JSON -- COMMAND [ARG ...]
// Lists the server's tools, calls TOOL with ARGS_JSON, prints {"tools": [...], "result": ...} and exits 1
// if the call failed or TOOL is not listed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const separator = process.argv.indexOf("--");
const [tool, argsJson] = process.argv.slice(2, separator);
const [command, ...args] = process.argv.slice(separator + 1);

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "dockyard-interop", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJson) });
console.log(JSON.stringify({ tools: names, result }));
await client.close();
process.exit(names.includes(tool) && !result.isError ? 0 : 1);
