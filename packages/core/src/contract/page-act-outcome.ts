import type { ErrorCode } from "../errors/error-code.js";
import type { PageSnapshot } from "./page-snapshot.js";

/**
 * What one `PageBrowser.act` did. Refusals before anything happened
 * (STALE_REF, UNSUPPORTED, INVALID_ARGUMENT) are thrown instead; an outcome
 * with `ok: false` means the action started, so it is never replayed blindly.
 */
export interface PageActOutcome {
  readonly ok: boolean;
  /** Steps confirmed done, in order, e.g. "focused", "typed 3 of 8 characters". Never holds typed text. */
  readonly progress: readonly string[];
  /** Whether the action may have had an effect beyond `progress` (the page changed under it). */
  readonly uncertain: boolean;
  readonly error?: { readonly code: ErrorCode; readonly message: string };
  /** The page after the action, when it could be read. */
  readonly snapshot?: PageSnapshot;
}
