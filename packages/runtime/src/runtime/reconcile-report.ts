/** What one `reconcile()` pass did, for logs and an operator's view. */
export interface ReconcileReport {
  /** Running operations past their heartbeat timeout, now stored as `interrupted`. */
  readonly interrupted: readonly string[];
  /** Queued operations whose enqueue was missed, published again. */
  readonly republished: readonly string[];
  /** Machines with this deployment's labels that no record owned past the grace period: destroyed. */
  readonly destroyed: readonly string[];
  /** Machines no record owns yet, still inside the grace period: left for a later pass. */
  readonly awaitingGrace: readonly string[];
  /** Computers whose machine was gone: the open stretch closed as `reconciled` and the ref cleared. */
  readonly reconciled: readonly string[];
  /**
   * Computers whose machine ran although no record showed its start (a
   * worker died between bringing it up and recording it), seen so for the
   * grace period: a stretch and its run record are now open from when it
   * was first noticed.
   */
  readonly recordedStarts: readonly string[];
}
