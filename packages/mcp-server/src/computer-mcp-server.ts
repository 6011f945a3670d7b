import type { ProviderCapabilities } from "@agent-computer/core";
import {
  type ActivityEvent,
  type BotRun,
  type ComputerRuntime,
  ComputerToolSession,
  computerTools,
  toMcpTools,
} from "@agent-computer/runtime";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { callToolParams, invalidParams } from "./call-tool-params.js";

/** Options of `createComputerMcpServer`. */
export interface ComputerMcpServerOptions {
  run: BotRun;
  capabilities: ProviderCapabilities;
  /** Whether the client's model reads images (default true); without, no screenshot tools. */
  vision?: boolean;
  onActivity?: (event: ActivityEvent) => void;
  /**
   * The tool session (last frame seen, last desktop action) of this client.
   * One per client: a client that never saw a frame must get it
   * (docs/architecture.md §10). A new one by default.
   */
  session?: ComputerToolSession;
  /** The run's runtime: its takeover and desktop events change the tool list, and clients are told. */
  runtime?: ComputerRuntime;
  /**
   * Wraps every tool call (default: none). The bin's server counts calls in
   * flight with it, so it ends its run only between calls (idle-ending-run.ts).
   */
  aroundToolCall?: <T>(call: () => Promise<T>) => Promise<T>;
}

/**
 * `tools/call` as the protocol layer sees it: any params, checked by
 * `callToolParams`. Registered below the SDK's `Server` wrapper on purpose:
 * that wrapper parses the request first and answers a bad one with the
 * parser's raw dump, where the client should read which param is wrong.
 */
const anyToolCall = z.object({ method: z.literal("tools/call"), params: z.unknown() });

/**
 * An MCP server exposing the agent tools of one (computer, bot). The tool
 * list is computed on every `tools/list`, so it follows the session's
 * capabilities; `toolsChanged()` sends `notifications/tools/list_changed`.
 * An unknown tool and malformed params are protocol errors (`-32602`), as
 * the MCP specification lists them; a tool that refuses its arguments or
 * fails answers an `isError` result the model reads.
 */
export function createComputerMcpServer(options: ComputerMcpServerOptions) {
  const session =
    options.session ??
    new ComputerToolSession({
      run: options.run,
      capabilities: options.capabilities,
      vision: options.vision ?? true,
      ...(options.onActivity ? { onActivity: options.onActivity } : {}),
    });
  const tools = () => toMcpTools(computerTools(session), session);
  const server = new Server(
    { name: "agent-computer", version: "0.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools().map(({ name, title, description, inputSchema, annotations }) => ({
      name,
      title,
      description,
      inputSchema,
      annotations,
    })),
  }));
  Protocol.prototype.setRequestHandler.call(server, anyToolCall, async (request, extra) => {
    const params = callToolParams(request.params);
    const tool = tools().find((t) => t.name === params.name);
    if (!tool) {
      const offered = tools().map((t) => t.name);
      throw invalidParams(`Unknown tool: ${JSON.stringify(params.name)}. This server offers ${offered.join(", ")}.`);
    }
    const call = () => tool.call(params.arguments, extra.signal);
    return options.aroundToolCall ? options.aroundToolCall(call) : call();
  });
  const toolsChanged = () => server.sendToolListChanged();
  // A person taking or releasing this bot's screen adds or removes the
  // screen-changing tools; a (re)started computer may bring a desktop.
  const unsubscribe = options.runtime?.on((event) => {
    const ours = event.detail.botId === options.run.botId || event.type === "ready";
    if (ours && (event.type === "takeover-started" || event.type === "takeover-ended" || event.type === "ready")) {
      void toolsChanged().catch(() => {});
    }
  });
  server.onclose = () => unsubscribe?.();
  return {
    server,
    session,
    /** Tells connected clients to list the tools again. */
    toolsChanged,
  };
}
