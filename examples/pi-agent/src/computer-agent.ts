import {
  type ActivityEvent,
  type BotRun,
  ComputerToolSession,
  computerTools,
  toPiTools,
} from "@agent-computer/runtime";
import { Agent } from "@mariozechner/pi-agent-core";
import type { Model } from "@mariozechner/pi-ai";

export const SYSTEM_PROMPT = `You work on your own Linux computer through tools: a shell, files, a desktop with Chromium, and page tools that read web pages as text with element refs.
Your own folder is bots/<your-id>/; put work meant for others in ../../shared/.
Prefer browser_snapshot and browser_act for web pages; use screenshots only when the page tools cannot do it.
If you need a password, a 2FA code or a judgment call, use request_takeover and wait.`;

/**
 * A Pi agent whose tools act on one bot's computer. The tools are core's
 * definitions adapted to Pi's AgentTool shape; nothing here is Pi-specific
 * beyond that adapter.
 */
export function createComputerAgent(options: {
  run: BotRun;
  capabilities: ComputerToolSession["capabilities"];
  model: Model<string>;
  onActivity?: (event: ActivityEvent) => void;
  getApiKey?: (provider: string) => string | undefined;
}): Agent {
  const session = new ComputerToolSession({
    run: options.run,
    capabilities: options.capabilities,
    vision: options.model.input.includes("image"),
    ...(options.onActivity ? { onActivity: options.onActivity } : {}),
  });
  return new Agent({
    initialState: {
      systemPrompt: SYSTEM_PROMPT,
      model: options.model,
      // Pi types its tools with TypeBox; ours carry plain JSON Schema of the same shape.
      tools: toPiTools(computerTools(session), session) as never,
    },
    ...(options.getApiKey ? { getApiKey: options.getApiKey } : {}),
  });
}
