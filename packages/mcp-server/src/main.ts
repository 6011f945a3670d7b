// The `agent-computer-mcp` bin. Settings come from the environment (see
// `usage.ts`); stdout carries the protocol, so everything else goes to stderr.

import { AgentComputerError } from "@agent-computer/core";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { startMcpServer } from "./start-mcp-server.js";
import { USAGE } from "./usage.js";

const log = (line: string) => process.stderr.write(`${line}\n`);

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

try {
  const started = await startMcpServer({ env: process.env, log, stdio: () => new StdioServerTransport() });
  const stop = () => {
    void started.stop().finally(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  if (!process.env.MCP_HTTP_PORT) process.stdin.on("close", stop);
} catch (error) {
  log(
    AgentComputerError.is(error)
      ? `agent-computer-mcp cannot start: ${error.code}: ${error.message}`
      : `agent-computer-mcp cannot start: ${String(error)}`,
  );
  process.exit(1);
}
