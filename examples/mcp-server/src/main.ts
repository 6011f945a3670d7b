// The MCP server is the package @agent-computer/mcp-server now (packages/mcp-server,
// the `agent-computer-mcp` bin). This example starts it as before: on the
// in-process fake provider (no Docker, no key) unless SANDBOX_PROVIDER says
// otherwise, over stdio, or over streamable HTTP with MCP_HTTP_PORT and
// MCP_AUTH_TOKEN set. stdout carries the protocol: logs go to stderr.
//
//   npx tsx examples/mcp-server/src/main.ts

import { startMcpServer } from "@agent-computer/mcp-server";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const started = await startMcpServer({
  env: { SANDBOX_PROVIDER: "fake", AGENT_COMPUTER_DATA_DIR: "out/mcp-server-data", ...process.env },
  log: (line) => console.error(line),
  stdio: () => new StdioServerTransport(),
});
const stop = () => void started.stop().finally(() => process.exit(0));
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
if (!process.env.MCP_HTTP_PORT) process.stdin.on("close", stop);
