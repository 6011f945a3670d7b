import { AgentComputerError } from "@agent-computer/core";

/** Builds the computer template from the computer image (2 vCPU, 4 GB). Not built yet. */
export async function buildE2bTemplate(_options: Record<string, unknown> = {}): Promise<never> {
  throw new AgentComputerError(
    "UNSUPPORTED",
    "agent-computer-e2b-template build is not built yet; build the template from the computer image with the E2B CLI (2 vCPU, 4096 MB).",
  );
}
