import { AgentComputerError } from "@agent-computer/core";
import { HOME_TRANSFER_EXIT } from "./home-transfer-scripts.js";

/**
 * The error for an export script (`HOME_TRANSFER_SCRIPTS.exportHome` or
 * `exportHomeToFile`) that exited non-zero in a machine: `NOT_FOUND` when
 * the home is missing, else `UNAVAILABLE` with tar's message. Shared by every
 * provider whose home is a folder inside the machine.
 */
export function homeExportFailure(
  result: { exitCode: number | null; stderr: Uint8Array | string },
  at: { ref: string; workspacePath: string },
): AgentComputerError {
  if (result.exitCode === HOME_TRANSFER_EXIT.missingHome) {
    return new AgentComputerError("NOT_FOUND", `The home ${at.workspacePath} is missing in ${at.ref}.`);
  }
  const message = Buffer.from(result.stderr).toString("utf8").trim().slice(0, 500);
  return new AgentComputerError(
    "UNAVAILABLE",
    `Exporting the home of ${at.ref} failed (exit ${result.exitCode ?? "killed"}): ${message || "no message"}`,
    { retryable: false },
  );
}
