import { AgentComputerError, COMPUTER_LABELS, labelValueOf, type SandboxProvider } from "@agent-computer/core";
import type { ComputerRuntime } from "@agent-computer/runtime";

/**
 * CONFLICT when a machine of this computer runs that this server's state
 * store does not know: another server, with its own state (another data
 * dir, another database), serves the same computer. Starting here would
 * bring up a second machine for one computer id (issue 47: two machines on
 * one home). Servers that share the state store find the running machine
 * in their shared record and share it instead; the leases coordinate them.
 */
export async function refuseSecondMachine(input: {
  provider: SandboxProvider;
  runtime: ComputerRuntime;
  computerId: string;
  /** What to tell the person about sharing: where this server keeps its state. */
  stateWhere: string;
}): Promise<void> {
  const { provider, runtime, computerId } = input;
  const record = await runtime.leases.getComputer(computerId);
  // The runtime labels machines with labelValueOf(id); Docker, which takes any value, puts the id itself
  // there instead (provider-docker's docker-provider.ts, provision). Other providers may refuse a value
  // that is not a label value, so only Docker is asked for both.
  const values = [...new Set([labelValueOf(computerId), ...(provider.kind === "docker" ? [computerId] : [])])];
  const running = await Promise.all(
    values.map((value) => provider.list({ labels: { [COMPUTER_LABELS.computerId]: value }, running: true })),
  );
  const others = [...new Set(running.flat())].filter((ref) => ref !== record?.providerRef);
  if (others.length === 0) return;
  throw new AgentComputerError(
    "CONFLICT",
    `Computer "${computerId}" already runs as ${others.join(", ")}, started by another agent-computer server with its own state (this one keeps its state in ${input.stateWhere}). Two machines on one computer would work on two copies of its home. Share it: give this server the same AGENT_COMPUTER_DATA_DIR (or AGENT_COMPUTER_DATABASE_URL) as the running one; or stop that server first (a machine a server left behind carries the label ${COMPUTER_LABELS.computerId}=${labelValueOf(computerId)}${provider.kind === "docker" ? `: docker ps --filter label=${COMPUTER_LABELS.computerId}=${computerId}` : ""}); or use another AGENT_COMPUTER_WORKSPACE.`,
    { details: { computerId, running: others } },
  );
}
