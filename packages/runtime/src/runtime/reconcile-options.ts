/** Options of `ComputerRuntime.reconcile`. */
export interface ReconcileOptions {
  /**
   * A machine no record owns is destroyed only after the reconciler has seen
   * it orphaned for this long (store clock), so a machine being provisioned
   * right now is never taken for an orphan. Default 10 minutes.
   */
  orphanGraceMs?: number;
  /**
   * A running machine whose start no record shows gets its stretch opened
   * only after the reconciler has seen it so for this long, so a worker
   * bringing it up right now records the start itself. Default 60 s.
   */
  unrecordedGraceMs?: number;
  /** A queued operation this old is published again (its enqueue may have been lost). Default 60 s. */
  republishAfterMs?: number;
}
