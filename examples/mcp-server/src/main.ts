// An MCP server over stdio exposing the agent tools of one (computer, bot).
// Point any MCP client (Claude Desktop, Cursor, the MCP Inspector) at
//
//   npx tsx examples/mcp-server/src/main.ts
//
// or, with MCP_HTTP_PORT set, over streamable HTTP at http://127.0.0.1:PORT/mcp.
// It runs on the in-process fake provider, so it needs no Docker and no key;
// swap in a real provider (e.g. @agent-computer/provider-docker) for a real
// computer. stdout carries the protocol: log to stderr only.

import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { type ActivityEvent, createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createComputerMcpServer } from "./computer-mcp-server.js";
import { serveMcpHttp } from "./http.js";

const runtime = createComputerRuntime({
  provider: createFakeProvider(),
  stateStore: new MemoryStateStore(),
  homeStore: new LocalAgentHomeStore({ dataDir: process.env.AGENT_COMPUTER_DATA_DIR ?? "out/mcp-server-data" }),
  idleMs: 0,
});
const run = runtime.startRun({
  workspaceId: process.env.AGENT_COMPUTER_WORKSPACE ?? "mcp",
  botId: process.env.AGENT_COMPUTER_BOT ?? "mcp",
});
const stop = async () => {
  await run.end("completed");
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
const onActivity = (e: ActivityEvent) => console.error(`activity ${e.tool}: ${e.summary}`);
if (process.env.MCP_HTTP_PORT) {
  const { url } = await serveMcpHttp({
    run,
    capabilities: runtime.capabilities,
    onActivity,
    port: Number(process.env.MCP_HTTP_PORT),
  });
  console.error(`agent-computer MCP server at ${url}`);
} else {
  const { server } = createComputerMcpServer({ run, capabilities: runtime.capabilities, onActivity });
  await server.connect(new StdioServerTransport());
  console.error("agent-computer MCP server on stdio");
  process.stdin.on("close", () => void stop());
}
