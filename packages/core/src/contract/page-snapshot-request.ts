/**
 * What `PageBrowser.snapshot` reads (docs/architecture.md §5): the page from
 * its top by default; from a point of the page to read past the cap; only
 * what changed since the latest snapshot when `delta` is asked for.
 */
export interface PageSnapshotRequest {
  /** Continue after this ref of the latest snapshot, in document order (elements and text). */
  readonly after?: string;
  /** Skip this many characters of page text after `after` (or the top): text read on from a cut. */
  readonly textFrom?: number;
  /** Answer with what changed since the latest snapshot of this document, unless a full one is smaller. */
  readonly delta?: boolean;
}
