import type { LeaseEngine } from "@agent-computer/leases";

/** Options of `ComputerHomeRecords`. */
export interface ComputerHomeRecordsOptions {
  /** The lease engine whose computer records hold each home's revision and wrapped data key. */
  leases: LeaseEngine;
  /** The computer that owns a home (default: the home key is the computer id). */
  computerIdOf?: (homeKey: string) => string;
  /**
   * The ids of every live computer, for the reconciler. The state store has
   * no listing, so the app, which knows its computers, supplies them.
   */
  computerIds: () => Iterable<string> | AsyncIterable<string>;
  /** Holder name of the checkpoint lease taken for a checkpoint without a `commit` hook (default "object-home-store"). */
  holder?: string;
}
