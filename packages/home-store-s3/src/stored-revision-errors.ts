import { AgentComputerError } from "@agent-computer/core";
import { MAX_MANIFEST_BYTES } from "./chunked/sealed-manifest.js";

// The refusals of a committed revision the bucket does not hold as it was
// committed (issue 45, findings 5 and 7): always CHECKPOINT_CORRUPT, which
// the runtime does not paper over with an empty home.

/** The refusal of a manifest object over MAX_MANIFEST_BYTES (its size, when the listing or the server said). */
export function manifestTooLarge(size: number | undefined): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The checkpoint's manifest is ${size === undefined ? "over" : `${size} bytes, over`} ${MAX_MANIFEST_BYTES} bytes; nothing was restored from it.`,
    { details: { size, limit: MAX_MANIFEST_BYTES } },
  );
}

/** A committed revision the bucket no longer holds: lost or rolled back, never "no checkpoint". */
export function missingRevision(storageId: string, revision: number, reason: string): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `Revision ${revision} of home storage "${storageId}" is committed but ${reason} (deleted or rolled back in the bucket); nothing was restored, and no empty home stands in for it.`,
    { details: { storageId, revision } },
  );
}
