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
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/**
 * An MCP server exposing the agent tools of one (computer, bot). The tool
 * list is computed on every `tools/list`, so it follows the session's
 * capabilities; call `toolsChanged()` after they change (desktop started,
 * takeover held) to send `notifications/tools/list_changed`.
 */
export function createComputerMcpServer(options: {
  run: BotRun;
  capabilities: ProviderCapabilities;
  vision?: boolean;
  onActivity?: (event: ActivityEvent) => void;
  /** A session to share across servers (one per HTTP request); a new one by default. */
  session?: ComputerToolSession;
  /** The run's runtime: its takeover and desktop events change the tool list, and clients are told. */
  runtime?: ComputerRuntime;
}) {
  const session =
    options.session ??
    new ComputerToolSession({
      run: options.run,
      capabilities: options.capabilities,
      vision: options.vision ?? true,
      onActivity: options.onActivity,
    });
  const tools = () => toMcpTools(computerTools(session), session);
  const server = new Server(
    { name: "agent-computer", version: "0.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools().map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools().find((t) => t.name === request.params.name);
    if (!tool) {
      return {
        isError: true,
        content: [{ type: "text" as const, text: `NOT_FOUND: no tool named "${request.params.name}".` }],
      };
    }
    return tool.call(request.params.arguments ?? {}, extra.signal);
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
