import type { HomeRecord } from "./home-record.js";

/**
 * The port through which `ObjectAgentHomeStore` reads and writes the few
 * facts it keeps with the computer record. `ComputerHomeRecords` backs it
 * with the lease engine; an app with its own computer table can implement it.
 */
/** What `HomeRecords.advanceRevision` moves: the home, the revision it expects, the next one and its winning attempt. */
export interface AdvanceRevisionInput {
  readonly homeKey: string;
  readonly expectedRevision: number;
  readonly next: number;
  readonly attempt?: string;
}

export interface HomeRecords {
  /** The home's record, or undefined when no live computer owns the home (never made, or deleted). */
  read(homeKey: string): Promise<HomeRecord | undefined>;
  /**
   * Stores the home's first wrapped data key, only if the record is still at
   * `expectedVersion` (CONFLICT otherwise, so two first checkpoints racing
   * agree on one key: the loser reads the winner's).
   */
  setWrappedDataKey(input: { homeKey: string; expectedVersion: number; wrappedDataKey: string }): Promise<HomeRecord>;
  /**
   * Advances the revision from `expectedRevision` to `next` as one
   * compare-and-set (CONFLICT when it moved), recording `attempt` as the
   * record's `committedAttempt`. Used only for a checkpoint without a
   * `commit` hook; with one, the hook is the commit.
   */
  advanceRevision(input: AdvanceRevisionInput): Promise<void>;
  /** Every live home, for the reconciler: an object whose storage id none of these has is garbage. */
  list(): AsyncIterable<HomeRecord>;
}
