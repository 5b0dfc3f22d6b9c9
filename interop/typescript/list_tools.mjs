// Lists a stdio MCP server's tools with the official TypeScript client
// (`@modelcontextprotocol/sdk`, the version npm resolved in interop/node_modules),
// printing {"protocolVersion": ..., "tools": [...]} on stdout: the reference the
// interop tests compare this crate's catalog with, tool for tool.
//
//   node interop/typescript/list_tools.mjs COMMAND [ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node list_tools.mjs COMMAND [ARGS...]");
  process.exit(2);
}
const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
// The client hands the negotiated version to a transport that can take it.
let protocolVersion = null;
transport.setProtocolVersion = (version) => {
  protocolVersion = version;
};
const client = new Client({ name: "reference", version: "0" });
await client.connect(transport);
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
process.stdout.write(JSON.stringify({ protocolVersion, tools }) + "\n");
await client.close();
