import type { RestoreStats } from "./restore-stats.js";

/**
 * A home fully extracted and checked in a staging folder beside its target,
 * not yet visible. A home store calls its commit hook between `stageHome`
 * and `swapIn`, so a lost fence leaves the previous home in place.
 */
export interface StagedHome {
  readonly stats: RestoreStats;
  /** The staging folder (a sibling of the target, removed by swap or discard). */
  readonly stagingDir: string;
  /** Replaces the target with the staged home (rename, then remove the old copy). */
  swapIn(): Promise<void>;
  /** Removes the staging folder; the target stays as it was. */
  discard(): Promise<void>;
  /**
   * Hands the staging folder over to the caller (a home store parks it
   * across its fenced commit) and ends this restore: the target is free for
   * the next one. Returns the folder's path.
   */
  detach(): string;
}
