/** Options of `LeaseEngine`. */
export interface LeaseEngineOptions {
  /**
   * The client's monotonic clock in milliseconds, which measures each
   * lease's local deadline. Default `performance.now()`. Never the wall
   * clock: a wall-clock step must not extend or cut a lease.
   */
  monotonicNow?: () => number;
  /** A reservation without a heartbeat for this long is `interrupted` (default 600 000: ten minutes). */
  interruptAfterMs?: number;
  /** Compare-and-set attempts per call before giving up with CONFLICT (default 64). */
  maxAttempts?: number;
}
