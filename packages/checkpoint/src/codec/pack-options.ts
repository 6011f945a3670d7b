import type { BigIntStats } from "node:fs";

/** Options of `packHome`. */
export interface PackOptions {
  /** Extra filter: return false to leave a home-relative path (and all below it) out. */
  include?: (relativePath: string) => boolean;
  /**
   * Called with each regular file once it is open, before a byte of it is
   * read, with that open file's `fstat` (inode, size, change time in ns):
   * return true to leave it out of the archive (counted in
   * `stats.reused`) because the caller holds its bytes already. A change
   * to the file after this call moves its change time, so a caller that
   * keeps the stat as a stamp sees the change next time.
   */
  reuse?: (relativePath: string, stat: BigIntStats) => boolean;
}
