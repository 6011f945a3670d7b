/**
 * Set on a snapshot that lists only what changed since `since`: its
 * `elements` are the added and changed ones; every other ref of `since`
 * still holds, except `removed`.
 */
export interface PageSnapshotDelta {
  /** The snapshot this one is relative to. */
  readonly since: string;
  /** Refs of `since` whose element is gone or was replaced (now STALE_REF). */
  readonly removed: readonly string[];
  /** How many listed elements are unchanged (their refs still hold). */
  readonly unchanged: number;
  /** Whether the page text is the same as in `since` (then `text` is empty). */
  readonly textUnchanged: boolean;
}
