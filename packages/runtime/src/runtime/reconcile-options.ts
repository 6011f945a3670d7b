/** Options of `ComputerRuntime.reconcile`. */
export interface ReconcileOptions {
  /**
   * A machine no record owns is destroyed only after the reconciler has seen
   * it orphaned for this long (store clock), so a machine being provisioned
   * right now is never taken for an orphan. Default 10 minutes.
   */
  orphanGraceMs?: number;
  /** A queued operation this old is published again (its enqueue may have been lost). Default 60 s. */
  republishAfterMs?: number;
}
