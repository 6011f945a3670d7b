/**
 * What an object home store needs to know about a home, kept with the
 * computer record (docs/architecture.md §6, §8) and not in the bucket: the bucket cannot
 * compare-and-set, the state store can.
 */
export interface HomeRecord {
  readonly homeKey: string;
  /** Names the home's objects (`homes/<storage-id>/...`) and binds its sealed checkpoints. */
  readonly storageId: string;
  /** The committed revision; 0 before the first checkpoint. Only a fenced commit moves it. */
  readonly revision: number;
  /**
   * The attempt that won `revision`'s commit, when the commit named it: the
   * only object of the revision a restore takes (issue 45, finding 9).
   * Absent for revisions committed before records named it.
   */
  readonly committedAttempt?: string;
  /** The home's data key wrapped by the space's content key; absent until the first checkpoint makes one. */
  readonly wrappedDataKey?: string;
  /** The record's version, for the compare-and-set of `setWrappedDataKey`. */
  readonly version: number;
}
