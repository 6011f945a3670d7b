import type { ComputerRuntime } from "@agent-computer/runtime";
import type Docker from "dockerode";

/**
 * Removes a test's computer, whatever state a failed test left it in: the
 * runtime deletes it, and on Docker its container is removed by force too.
 */
export async function removeComputer(
  runtime: Pick<ComputerRuntime, "leases" | "deleteComputer">,
  docker: Docker | undefined,
  computerId: string,
): Promise<void> {
  const record = await runtime.leases.getComputer(computerId);
  await runtime.deleteComputer(computerId).catch(() => {});
  const id = record?.providerRef?.startsWith("docker:") ? record.providerRef.slice("docker:".length) : undefined;
  if (id && docker)
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => {});
}
