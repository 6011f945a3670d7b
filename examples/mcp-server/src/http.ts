import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ProviderCapabilities } from "@agent-computer/core";
import { type ActivityEvent, type BotRun, ComputerToolSession } from "@agent-computer/runtime";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createComputerMcpServer } from "./computer-mcp-server.js";

/**
 * Serves the tools of one (computer, bot) over MCP streamable HTTP at
 * `POST /mcp`, stateless: each request gets its own MCP server and
 * transport, all sharing one tool session (so identical screenshots are
 * still omitted). Stateless servers send no list_changed notifications.
 * Binds to 127.0.0.1 by default: put authentication in front before exposing it.
 */
export async function serveMcpHttp(options: {
  run: BotRun;
  capabilities: ProviderCapabilities;
  vision?: boolean;
  onActivity?: (event: ActivityEvent) => void;
  port?: number;
  host?: string;
}): Promise<{ url: string; close(): Promise<void> }> {
  const session = new ComputerToolSession({
    run: options.run,
    capabilities: options.capabilities,
    vision: options.vision ?? true,
    onActivity: options.onActivity,
  });
  const http = createServer(async (req, res) => {
    if (req.url?.split("?")[0] !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    const { server } = createComputerMcpServer({ ...options, session });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve));
  const { address, port } = http.address() as AddressInfo;
  return {
    url: `http://${address}:${port}/mcp`,
    close: () => new Promise<void>((resolve, reject) => http.close((e) => (e ? reject(e) : resolve()))),
  };
}
