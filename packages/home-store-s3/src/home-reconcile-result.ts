/** What `ObjectAgentHomeStore.reconcile` found and removed (or, in a dry run, would remove). */
export interface HomeReconcileResult {
  readonly dryRun: boolean;
  /** Objects under the prefix that were looked at. */
  readonly examined: number;
  /** Keys deleted (dry run: that would be deleted), with why. */
  readonly removed: readonly {
    readonly key: string;
    readonly reason: "unowned" | "superseded" | "abandoned" | "unreferenced";
  }[];
  /** Keys kept because a live home's current revision (or a checkpoint still within its grace period) uses them. */
  readonly kept: readonly string[];
}
