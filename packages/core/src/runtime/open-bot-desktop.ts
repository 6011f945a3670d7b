import type { DesktopOptions } from "../contract/desktop-options.js";
import type { DesktopSession } from "../contract/desktop-session.js";
import type { Machine } from "../contract/machine.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";

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
