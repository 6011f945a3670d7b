import type { ErrorCode } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { ComputerOperation } from "./computer-operation.js";

/** The warning every recovery carries, and every release of an interrupted operation. */
export const UNSAVED_WORK =
  "Recovery replaces the machine from the last saved workspace; work not saved since then may be lost.";

/** The operation's stored fields, without the record version the ledger adds. */
export function fieldsOf(operation: ComputerOperation): Omit<ComputerOperation, "version"> {
  const { version: _version, ...fields } = operation;
  return fields;
}

/** A plain object a stage returned: its facts go into the stage's `detail`. */
export function isDetail(value: unknown): value is Record<string, string | number | boolean> {
  return (
    typeof value === "object" &&
    value !== null &&
    !("ref" in value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

export function codeOf(error: unknown): ErrorCode {
  return AgentComputerError.is(error) ? error.code : "UNAVAILABLE";
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
