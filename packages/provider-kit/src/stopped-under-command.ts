import { AgentComputerError } from "@agent-computer/core";

/**
 * A call about a command under way (a poll, a kill, a cleanup) found its
 * machine stopped: the command went with it. Not retryable: it may have
 * done part of its work. Calls made with `{ wake: false }` (WakeOption)
 * answer this instead of starting the machine again.
 */
export function stoppedUnderCommand(ref: string): AgentComputerError {
  return new AgentComputerError("UNAVAILABLE", `${ref} stopped while the command ran; it ended with it.`, {
    retryable: false,
  });
}
