import type { PageElement } from "@agent-computer/core";

/** What the page script's `collect` answers, before refs are assigned. */
export interface CollectedPage {
  readonly url: string;
  readonly title: string;
  readonly text: string;
  readonly textTruncated: boolean;
  readonly elements: readonly Omit<PageElement, "ref">[];
  readonly omitted: number;
}
