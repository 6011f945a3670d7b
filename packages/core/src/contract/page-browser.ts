import type { OpContext } from "./op-context.js";
import type { PageActOutcome } from "./page-act-outcome.js";
import type { PageAction } from "./page-action.js";
import type { PageActOptions } from "./page-secret.js";
import type { PageSnapshot } from "./page-snapshot.js";
import type { PageSnapshotRequest } from "./page-snapshot-request.js";

/**
 * The page-level browser of a bot's desktop (docs/architecture.md §5): the bot's visible
 * tab read as text and driven by element refs. A ref whose element was
 * replaced or removed is refused with STALE_REF, never retargeted; frames,
 * shadow-DOM-only controls and unsupported interactions are UNSUPPORTED
 * with a pointer to the desktop tools.
 */
export interface PageBrowser {
  /** Loads `url` in the bot's tab, waits for the load (bounded), and snapshots it. */
  navigate(url: string, ctx?: OpContext): Promise<PageSnapshot>;
  /**
   * Reads the page (all of it from the top, from a point past a cut, or only
   * what changed); refs of earlier snapshots of the same document that are
   * not listed stay usable only while their element lives.
   */
  snapshot(ctx?: OpContext, request?: PageSnapshotRequest): Promise<PageSnapshot>;
  /**
   * Acts on one element of the latest snapshot, then snapshots the page
   * again: only what the action changed when `options.delta` is set. An
   * action naming a `secret` types `options.secretText` (PERMISSION_DENIED,
   * nothing typed, on a page outside its origins).
   */
  act(action: PageAction, ctx?: OpContext, options?: PageActOptions): Promise<PageActOutcome>;
}
