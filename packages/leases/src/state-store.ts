import type { CommitExpectation } from "./commit-expectation.js";
import type { VersionedRecord } from "./versioned-record.js";

/**
 * The port every lease store implements (docs/architecture.md §6): versioned records and
 * one atomic compare-and-set. The `LeaseEngine` builds leases, fencing and
 * computer records on top, so a store stays small and its semantics are
 * checked by `defineStateStoreConformance`.
 */
export interface StateStore {
  /**
   * The current records of `keys` that exist; missing keys are absent from
   * the map. The records are copies: changing them changes nothing stored.
   */
  read(keys: readonly string[]): Promise<Map<string, VersionedRecord>>;
  /**
   * Writes every record of `write` if and only if every expectation holds,
   * as one atomic step (serializable with every other commit, including
   * expectations of `null` on keys that do not exist yet). Returns false,
   * writing nothing, when any expectation fails. Call `checkCommit` first:
   * every written key needs an expectation and its version must be the
   * expected one plus one (1 for a new key).
   *
   * Throws (UNAVAILABLE, retryable) when the store cannot be reached; it
   * then may or may not have applied the commit, and the engine's retries
   * are written to be safe either way.
   */
  commit(expect: readonly CommitExpectation[], write: readonly VersionedRecord[]): Promise<boolean>;
  /**
   * Milliseconds since the epoch by the store's clock: the one clock every
   * process sharing the store agrees on. Never the caller's `Date.now()`.
   */
  now(): Promise<number>;
}
