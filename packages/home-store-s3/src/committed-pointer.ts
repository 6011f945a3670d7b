import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";

/**
 * The content of `homes/<storage-id>/<revision>/committed` (README "Object
 * layout"): the winning attempt's id and an HMAC-SHA256 of the storage id,
 * revision and attempt under a key derived from the home's data key, as
 * `<attempt>.<hex mac>`. Only the writer whose fenced commit succeeded
 * writes it (object-agent-home-store.ts, takeCheckpoint), so a pointer that
 * verifies names the winner. A plain attempt id was enough to restore a
 * losing attempt of the same revision as that revision once someone flipped
 * the pointer to it (issue 45, finding 9): the loser is sealed under the
 * same key and revision, so its own content cannot tell.
 */

/** The most bytes a pointer is read up to: an attempt id, a dot and a MAC are 89. */
export const MAX_POINTER_BYTES = 256;

/**
 * What a pointer says: the winner's attempt; that the home's copy was
 * deleted at this revision (`delete`, so a restore has none, not a lost
 * one); nothing (not of the signed form); or forged (signed form, wrong MAC).
 */
export type PointerReading = { attempt: string } | { deleted: true } | { unsigned: true } | { forged: true };

/** Stands where the attempt id would in the pointer `delete` leaves. */
const DELETED = "deleted";

function pointerKeyOf(dataKey: Uint8Array, storageId: string): Buffer {
  return Buffer.from(
    hkdfSync("sha256", dataKey, Buffer.from(storageId, "utf8"), "agent-computer home committed pointer", 32),
  );
}

function macOf(dataKey: Uint8Array, storageId: string, revision: number, attempt: string): Buffer {
  return createHmac("sha256", pointerKeyOf(dataKey, storageId))
    .update(`ac-committed\0${storageId}\0${revision}\0${attempt}`, "utf8")
    .digest();
}

export function signPointer(dataKey: Uint8Array, storageId: string, revision: number, attempt: string): string {
  return `${attempt}.${macOf(dataKey, storageId, revision, attempt).toString("hex")}`;
}

export function verifyPointer(dataKey: Uint8Array, storageId: string, revision: number, text: string): PointerReading {
  // Anything not of the signed form (empty or torn, written by hand, or by a version before pointers were
  // signed) names no winner, as no pointer does: the only candidate is taken, several are CHECKPOINT_CORRUPT.
  const match = /^([0-9a-f]{24}|deleted)\.([0-9a-f]{64})$/.exec(text.trim());
  if (!match) return { unsigned: true };
  const attempt = match[1] as string;
  const expected = macOf(dataKey, storageId, revision, attempt);
  if (!timingSafeEqual(expected, Buffer.from(match[2] as string, "hex"))) return { forged: true };
  return attempt === DELETED ? { deleted: true } : { attempt };
}

/** The pointer `delete` writes at the record's revision: the copy is gone on purpose. */
export function signDeletedPointer(dataKey: Uint8Array, storageId: string, revision: number): string {
  return signPointer(dataKey, storageId, revision, DELETED);
}

export function forgedPointerError(storageId: string, revision: number): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The committed pointer of revision ${revision} of home storage "${storageId}" does not authenticate under the home's key (altered, or copied from another revision or home); nothing was restored.`,
    { details: { storageId, revision } },
  );
}
