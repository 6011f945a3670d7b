import { AgentComputerError } from "@agent-computer/core";

const UNTOUCHED = "The previous home is untouched.";

/** An archive that is not a safe home: RESTORE_REJECTED. */
export function refuseRestore(reason: string, details?: Record<string, unknown>): never {
  throw new AgentComputerError("RESTORE_REJECTED", `Restore refused: ${reason}. ${UNTOUCHED}`, { details });
}

/** An archive over one of the restore limits: LIMIT_EXCEEDED. */
export function refuseOverLimit(reason: string, details?: Record<string, unknown>): never {
  throw new AgentComputerError(
    "LIMIT_EXCEEDED",
    `Restore refused: ${reason}. ${UNTOUCHED} Raise the limit if this home is meant to be that large.`,
    { details },
  );
}

/** A path shortened for messages, so a hostile 4 KiB name does not flood logs. */
export function shown(path: string): string {
  let printable = "";
  for (const char of path) {
    const code = char.charCodeAt(0);
    printable += code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, "0")}` : char;
  }
  return printable.length > 80 ? `${printable.slice(0, 77)}...` : printable;
}
