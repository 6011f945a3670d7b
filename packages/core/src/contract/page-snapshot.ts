import type { PageElement } from "./page-element.js";

/** Bounded text of a page and at most 80 interactive elements. */
export interface PageSnapshot {
  /** Changes with every snapshot; refs belong to exactly one. */
  readonly snapshotId: string;
  readonly url: string;
  readonly title: string;
  /** The page's visible text, whitespace-collapsed and cut at a bound. */
  readonly text: string;
  /** Whether `text` was cut. */
  readonly textTruncated: boolean;
  readonly elements: readonly PageElement[];
  /** Interactive elements that did not fit, so a model knows to scroll or narrow. */
  readonly omittedElements: number;
}
