import { AgentComputerError, type SandboxProvider } from "@agent-computer/core";

/**
 * Novita's E2B-compatible service (`novita-sandbox`, a fork of an older
 * E2B SDK). Not built yet: it needs its own quarantine rule (a command whose
 * kill cannot be confirmed pauses and quarantines the computer), which this
 * release does not have.
 */
export function novitaProvider(_options: Record<string, unknown> = {}): SandboxProvider {
  throw new AgentComputerError(
    "UNSUPPORTED",
    "The Novita flavour of provider-e2b is not built yet (it needs command-kill quarantine); use e2bProvider, or Docker or Kubernetes.",
  );
}

/** Builds the computer template from the computer image (2 vCPU, 4 GB). Not built yet. */
export async function buildE2bTemplate(_options: Record<string, unknown> = {}): Promise<never> {
  throw new AgentComputerError(
    "UNSUPPORTED",
    "agent-computer-e2b-template build is not built yet; build the template from the computer image with the E2B CLI (2 vCPU, 4096 MB).",
  );
}
