/**
 * Where a cut snapshot continues: passing `after` and `textFrom` to
 * `PageBrowser.snapshot` reads the next part of the page, always past what
 * this snapshot listed.
 */
export interface PageSnapshotContinuation {
  /** The last ref listed before the cut, or the `after` this snapshot started from. */
  readonly after?: string;
  readonly textFrom: number;
  /** Interactive elements after the cut. */
  readonly moreElements: number;
  /** Characters of page text after the cut. */
  readonly moreText: number;
}
