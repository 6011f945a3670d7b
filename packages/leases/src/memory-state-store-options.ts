/** Options of `MemoryStateStore`. */
export interface MemoryStateStoreOptions {
  /**
   * The store's clock in milliseconds since the epoch. Default: the process's
   * monotonic clock anchored at its start (`performance.timeOrigin +
   * performance.now()`), so a wall-clock step on this host moves no lease.
   * Tests pass a manual clock to make time jump.
   */
  clock?: () => number;
}
