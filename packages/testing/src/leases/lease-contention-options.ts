import type { LeaseEngine } from "@agent-computer/leases";

/** Options of `runLeaseContention`. */
export interface LeaseContentionOptions {
  /** The engine the workers share; its store is the one under test. */
  engine: LeaseEngine;
  /** Computers (checkpoint-lease keys) the workers fight over (default 3). */
  keys?: number;
  /** Concurrent workers (default 12). */
  workers?: number;
  /** Operations per worker (default 300). */
  opsPerWorker?: number;
  /** Lease TTL (default 40 ms). */
  ttlMs?: number;
  /** How long a paused worker sleeps; longer than the TTL so its lease lapses (default 1.5 x ttlMs). */
  pauseMs?: number;
  /** Chance that an action pauses before it is applied (default 0.05). */
  pauseChance?: number;
  /**
   * `true` (default): actions go through `commitRevision`, the fenced commit.
   * `false`: an advisory `assertCurrent` followed by a version-only
   * compare-and-set, to prove the checker catches what that lets through.
   */
  fence?: boolean;
  /** Seeds the workers' choices (timing stays real). */
  seed?: number;
}
