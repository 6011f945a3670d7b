// The `agent-computer-mcp` bin. Settings come from the environment (see
// `usage.ts`); stdout carries the protocol, so everything else goes to stderr.

import { AgentComputerError } from "@agent-computer/core";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { prepareComputerImage } from "./prepare-computer-image.js";
import { startMcpServer } from "./start-mcp-server.js";
import { USAGE } from "./usage.js";

const log = (line: string) => process.stderr.write(`${line}\n`);
const describe = (error: unknown) => (AgentComputerError.is(error) ? `${error.code}: ${error.message}` : String(error));

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

if (process.argv.includes("--prepare")) {
  try {
    await prepareComputerImage({ env: process.env, log });
    process.exit(0);
  } catch (error) {
    log(`agent-computer-mcp --prepare failed: ${describe(error)}`);
    process.exit(1);
  }
}

try {
  const started = await startMcpServer({ env: process.env, log, stdio: () => new StdioServerTransport() });
  // One stop, whichever comes first (the client closing stdin, then its SIGTERM): a second
  // signal waits for the computer's stop instead of cutting it short.
  const stop = () => {
    void started
      .stop()
      .catch((error: unknown) => log(`agent-computer-mcp stopped with an error: ${describe(error)}`))
      .finally(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  if (!process.env.MCP_HTTP_PORT) process.stdin.on("close", stop);
} catch (error) {
  log(`agent-computer-mcp cannot start: ${describe(error)}`);
  process.exit(1);
}
