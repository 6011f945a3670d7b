import type { OpContext } from "@agent-computer/core";
import type { CollectedPage } from "./collected-page.js";

/**
 * The few primitives a browser gives `PageSession`: the bot's Chromium
 * over CDP inside the computer, or the emulator's in-process DOM. `Handle`
 * names one element for as long as that element lives and never a
 * look-alike (a backend node id, or the element object).
 */
export interface PageEngine<Handle> {
  /** Whether the engine lays pages out (bounding boxes, viewport); the emulator does not. */
  readonly layout: boolean;
  /** Loads `url` and waits for its load event, at most `timeoutMs`; TIMEOUT past it. */
  load(url: string, timeoutMs: number, ctx: OpContext): Promise<void>;
  /** Runs the page script's collect (from the top, or after `after`): the page and a handle per listed element, in one round trip. */
  collect(command: Record<string, unknown>, after?: Handle): Promise<{ page: CollectedPage; handles: Handle[] }>;
  /**
   * Runs the page script's `perform` on the element behind `handle`. Throws
   * STALE_REF when the handle no longer resolves; other throws mean the page
   * went away under the call.
   */
  perform(handle: Handle, command: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** A stable primitive per element, to keep an element's ref across snapshots. */
  identity(handle: Handle): string | number;
  /** Changes whenever the tab's document is replaced (a navigation). */
  documentKey(): Promise<string>;
  /** Lets the page react to an action (events, timers, a navigation it started), bounded. */
  settle(): Promise<void>;
}
