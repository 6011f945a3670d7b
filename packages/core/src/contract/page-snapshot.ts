import type { PageElement } from "./page-element.js";
import type { PageSnapshotContinuation } from "./page-snapshot-continuation.js";
import type { PageSnapshotDelta } from "./page-snapshot-delta.js";

/** Bounded text of a page and at most 80 interactive elements. */
export interface PageSnapshot {
  /** Changes with every snapshot; refs belong to exactly one. */
  readonly snapshotId: string;
  readonly url: string;
  readonly title: string;
  /**
   * The page's visible text in document order, cut at a bound, with each
   * listed element in place as `[e12]` (its name is not repeated here).
   */
  readonly text: string;
  /** Whether `text` was cut. */
  readonly textTruncated: boolean;
  readonly elements: readonly PageElement[];
  /** Interactive elements that did not fit, so a model knows to read on. */
  readonly omittedElements: number;
  /** Set when the snapshot was cut (elements or text): how to read on. */
  readonly continuation?: PageSnapshotContinuation;
  /** Set when only what changed since an earlier snapshot is listed. */
  readonly delta?: PageSnapshotDelta;
}
