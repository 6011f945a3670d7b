/** One side of a comparison: a label and the work to time. */
export interface BenchSide {
  readonly label: string;
  /** One run of the work. Its duration is measured around this call. */
  run(): Promise<unknown> | unknown;
  /**
   * Called after each run, outside the timing: clean-up that is not the
   * work measured (deleting what the run made), finished before the next
   * run starts, so neither side's timing holds the other's leftovers.
   */
  after?(): Promise<unknown> | unknown;
}

/**
 * A figure measured as a ratio: `subject` (our code) beside `baseline` (the
 * same work done by a reference) in the same run, because these machines are
 * shared and noisy and only the ratio travels.
 */
export interface BenchCase {
  readonly name: string;
  /**
   * `ms`: time per run (lower is better). `MB/s` and `ops/s`: `work` bytes or
   * operations per run divided by its time (higher is better).
   */
  readonly unit: "ms" | "MB/s" | "ops/s";
  /** Bytes (MB/s) or operations (ops/s) one run handles. */
  readonly work?: number;
  readonly subject: BenchSide;
  readonly baseline: BenchSide;
}
