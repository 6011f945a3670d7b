import { AgentComputerError } from "@agent-computer/core";
import { forgedPointerError, signPointer, verifyPointer } from "../committed-pointer.js";
import { missingRevision } from "../stored-revision-errors.js";
import { COMMITTED, type StoreBucket, type StoredObject } from "./store-bucket.js";

/**
 * The committed revision's object: the attempt the computer record names
 * as the commit's winner (`committedAttempt`), else the one a signed
 * pointer names, else (no pointer, or an unsigned one from before pointers
 * were signed) the only candidate. Undefined only when `delete` said,
 * under the home's key, that the copy is gone. A committed revision whose
 * objects are missing, or whose record or pointer names a missing attempt,
 * or whose pointer does not authenticate, is CHECKPOINT_CORRUPT: answering
 * "no checkpoint" there made the runtime start an empty home and commit it
 * (issue 45, finding 5); the record's name is in the state store, which
 * whoever rewrites the bucket cannot reach, so neither a pointer flipped
 * to a losing attempt nor a winner deleted with its pointer restores the
 * loser (finding 9).
 */
export async function currentObject(
  bucket: StoreBucket,
  storageId: string,
  revision: number,
  dataKey: Uint8Array,
  committedAttempt?: string,
): Promise<StoredObject | undefined> {
  const candidates = await bucket.listObjects(`${bucket.homesPrefix()}${storageId}/${revision}/`);
  const attempts = candidates.filter((o) => o.name !== COMMITTED && o.revision === revision);
  const pointer = candidates.find((o) => o.name === COMMITTED);
  const text = pointer === undefined ? undefined : await bucket.readPointer(pointer.key);
  const reading = text === undefined ? undefined : verifyPointer(dataKey, storageId, revision, text);
  if (reading !== undefined && "deleted" in reading && attempts.length === 0) return undefined;
  if (committedAttempt !== undefined) {
    const found = attempts.find((o) => o.name === committedAttempt);
    if (found) return found;
    throw missingRevision(
      storageId,
      revision,
      `the attempt its computer record names (${committedAttempt}) is missing`,
    );
  }
  if (reading !== undefined && "forged" in reading) throw forgedPointerError(storageId, revision);
  if (reading !== undefined && "attempt" in reading) {
    const found = attempts.find((o) => o.name === reading.attempt);
    if (found) return found;
    throw missingRevision(
      storageId,
      revision,
      `the attempt its committed pointer names (${reading.attempt}) is missing`,
    );
  }
  if (attempts.length === 1) return attempts[0];
  if (attempts.length === 0) throw missingRevision(storageId, revision, "the bucket holds no object of it");
  // Only a losing writer that crashed after a winner that crashed before its pointer leaves this.
  throw new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `Revision ${revision} of home storage "${storageId}" has ${attempts.length} candidate objects and no committed pointer; ` +
      "delete the ones that are not current (see the README, 'Object layout').",
    { details: { storageId, revision, candidates: attempts.map((o) => o.key) } },
  );
}

/**
 * Writes the signed pointer naming the winning attempt of `revision`. Only
 * the winner of the fenced commit gets here, so only it writes the pointer.
 * Best effort: the revision is committed, and a reader without the pointer
 * takes the only candidate.
 */
export async function writeCommittedPointer(
  bucket: StoreBucket,
  dataKey: Uint8Array,
  storageId: string,
  revision: number,
  attempt: string,
): Promise<void> {
  await bucket
    .put(bucket.objectKey(storageId, revision, COMMITTED), signPointer(dataKey, storageId, revision, attempt))
    .catch(() => {});
}

/**
 * Deletes the given revisions' objects below `next` and the losing attempts
 * of `next`, listing only those revisions' folders (a chunked home's folder
 * also holds every chunk). Older leftovers of a crash are the reconciler's.
 */
export async function deleteLeftovers(
  bucket: StoreBucket,
  storageId: string,
  revisions: readonly number[],
  next: number,
  attempt: string,
): Promise<void> {
  const listed = await Promise.all(
    revisions.filter((r) => r > 0).map((r) => bucket.listObjects(`${bucket.homesPrefix()}${storageId}/${r}/`)),
  );
  const leftovers = listed
    .flat()
    .filter((o) => o.revision < next || (o.revision === next && o.name !== attempt && o.name !== COMMITTED));
  await bucket.deleteKeys(leftovers.map((o) => o.key));
}
