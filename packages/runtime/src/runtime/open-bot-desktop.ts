import type { DesktopOptions, DesktopSession, Machine } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";

/** A bot's desktop on `machine` (started when needed); UNSUPPORTED where the provider has none. */
export async function openBotDesktop(
  machine: Machine,
  botId: string,
  options?: DesktopOptions,
): Promise<DesktopSession> {
  if (!machine.openDesktop)
    throw new AgentComputerError("UNSUPPORTED", "This computer has no desktop; use the shell and file tools.");
  return machine.openDesktop(botId, undefined, options);
}
