import type { PageElement } from "@agent-computer/core";

/** What the page script's `collect` answers, before refs are assigned. */
export interface CollectedPage {
  readonly url: string;
  readonly title: string;
  /** The page stream: text with each listed element as `\uE000<index>\uE001`. */
  readonly text: string;
  readonly textTruncated: boolean;
  readonly elements: readonly Omit<PageElement, "ref">[];
  readonly omitted: number;
  /** Where a cut stream continues: after the listed element `afterIndex` (-1: after the start), skipping `textFrom` characters. */
  readonly continuation: {
    readonly afterIndex: number;
    readonly textFrom: number;
    readonly moreElements: number;
    readonly moreText: number;
  } | null;
}
