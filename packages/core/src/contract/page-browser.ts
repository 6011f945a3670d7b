import type { OpContext } from "./op-context.js";

/** One interactive element of a page snapshot. */
export interface PageElement {
  /** `e1`, `e2`, ...: valid only for the snapshot that made it. */
  readonly ref: string;
  readonly role: string;
  readonly name: string;
  /** Password values are always masked. */
  readonly value?: string;
}

/** Bounded text of a page and at most 80 interactive elements. */
export interface PageSnapshot {
  readonly snapshotId: string;
  readonly url: string;
  readonly title: string;
  readonly text: string;
  readonly elements: readonly PageElement[];
  /** Elements that did not fit, so a model knows to scroll or narrow. */
  readonly omittedElements: number;
}

/**
 * The page-level browser of a bot's desktop (DESIGN §5). A ref whose element
 * was replaced is refused with STALE_REF, never retargeted.
 */
export interface PageBrowser {
  navigate(url: string, ctx?: OpContext): Promise<PageSnapshot>;
  snapshot(ctx?: OpContext): Promise<PageSnapshot>;
  act(
    action: { kind: "click" | "fill" | "select" | "press"; ref: string; value?: string },
    ctx?: OpContext,
  ): Promise<PageSnapshot>;
}
