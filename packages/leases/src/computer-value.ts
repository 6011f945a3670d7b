import type { ComputerRecord } from "./computer-record.js";
import { corrupt } from "./lease-record.js";
import type { VersionedRecord } from "./versioned-record.js";

/**
 * How the engine stores a computer. Deleting writes a tombstone instead of
 * removing the key, so the key's version keeps growing and a stale
 * `expectedVersion` from before the deletion can never match a re-created
 * computer.
 */
export interface ComputerValue {
  readonly type: "computer";
  readonly deleted: boolean;
  readonly fields?: Omit<ComputerRecord, "version">;
  /**
   * The last `commitRevision`, so a retry after a lost response recognises
   * its own applied commit instead of failing with CONFLICT.
   */
  readonly lastCommit?: { readonly token: number; readonly from: number; readonly to: number };
}

export function computerValueOf(record: VersionedRecord | undefined): ComputerValue | undefined {
  if (!record) return undefined;
  const v = record.value as Partial<ComputerValue>;
  if (v.type !== "computer" || typeof v.deleted !== "boolean" || (!v.deleted && typeof v.fields !== "object"))
    throw corrupt(record.key, "a computer");
  return v as ComputerValue;
}

/** The live computer, or undefined when missing or deleted. */
export function liveComputer(record: VersionedRecord | undefined): ComputerRecord | undefined {
  const value = computerValueOf(record);
  if (!record || !value || value.deleted || !value.fields) return undefined;
  return { ...value.fields, version: record.version };
}
