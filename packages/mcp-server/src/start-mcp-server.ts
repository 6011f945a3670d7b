import { homedir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { checkedToken } from "./bearer-token.js";
import { createComputerMcpServer } from "./computer-mcp-server.js";
import { providerFromEnvironment } from "./provider-from-environment.js";
import { serveMcpHttp } from "./serve-mcp-http.js";

/** What `startMcpServer` needs from its process. */
export interface StartMcpServerOptions {
  env: Record<string, string | undefined>;
  /** A line for the person who started it (stderr: stdout carries the protocol). */
  log: (line: string) => void;
  /** The stdio transport, made only when no HTTP port is set. */
  stdio: () => Transport;
}

/**
 * The bin's whole start: every setting is checked first (provider keys, the
 * HTTP token), so a mistake is one typed error before any computer starts;
 * then one run for the configured bot, served over stdio or HTTP.
 */
export async function startMcpServer(options: StartMcpServerOptions): Promise<{ stop(): Promise<void> }> {
  const { env, log } = options;
  const port = env.MCP_HTTP_PORT?.trim();
  if (port && !/^\d{1,5}$/.test(port)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `MCP_HTTP_PORT must be a port number, got ${JSON.stringify(port)}.`,
    );
  }
  const token = port ? checkedToken(env.MCP_AUTH_TOKEN) : undefined;
  const httpLimits = port ? httpSettings(env) : {};
  const dataDir = env.AGENT_COMPUTER_DATA_DIR?.trim() || join(homedir(), ".agent-computer", "mcp-server");
  const chosen = await providerFromEnvironment(env, { dataDir, log });
  log(`provider: ${chosen.name} (${chosen.reason})`);
  const runtime = createComputerRuntime({
    provider: chosen.provider,
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
  });
  const run = runtime.startRun({
    workspaceId: env.AGENT_COMPUTER_WORKSPACE?.trim() || "mcp",
    botId: env.AGENT_COMPUTER_BOT?.trim() || "mcp",
  });
  const shared = {
    run,
    runtime,
    capabilities: runtime.capabilities,
    vision: env.MCP_VISION !== "0",
    onActivity: (e: { tool: string; summary: string }) => log(`activity ${e.tool}: ${e.summary}`),
  };
  if (token) {
    const http = await serveMcpHttp({
      ...shared,
      token,
      port: Number(port),
      ...(env.MCP_HTTP_HOST ? { host: env.MCP_HTTP_HOST } : {}),
      ...httpLimits,
    });
    log(`agent-computer MCP server at ${http.url} (bearer token required)`);
    return {
      async stop() {
        await http.close();
        await run.end("completed");
      },
    };
  }
  const { server } = createComputerMcpServer(shared);
  await server.connect(options.stdio());
  log("agent-computer MCP server on stdio");
  return {
    async stop() {
      await server.close();
      await run.end("completed");
    },
  };
}

/** The HTTP transport's optional settings from the environment, each checked before anything starts. */
function httpSettings(env: Record<string, string | undefined>) {
  const list = (name: string) => {
    const items = env[name]
      ?.split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
    return items && items.length > 0 ? items : undefined;
  };
  const count = (name: string) => {
    const value = env[name]?.trim();
    if (!value) return undefined;
    if (!/^[1-9]\d{0,9}$/.test(value))
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `${name} must be a positive whole number, got ${JSON.stringify(value)}.`,
      );
    return Number(value);
  };
  const allowedHosts = list("MCP_ALLOWED_HOSTS");
  const allowedOrigins = list("MCP_ALLOWED_ORIGINS");
  const maxSessions = count("MCP_MAX_SESSIONS");
  const sessionIdleMs = count("MCP_SESSION_IDLE_MS");
  return {
    ...(allowedHosts ? { allowedHosts } : {}),
    ...(allowedOrigins ? { allowedOrigins } : {}),
    ...(maxSessions ? { maxSessions } : {}),
    ...(sessionIdleMs ? { sessionIdleMs } : {}),
  };
}
