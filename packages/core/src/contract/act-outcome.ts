import type { ErrorCode } from "../errors/error-code.js";

/** What happened to one action of a batch. */
export interface ActionResult {
  readonly index: number;
  readonly type: string;
  /** `not-run`: an earlier action failed, so this one never started. */
  readonly status: "done" | "failed" | "not-run";
  /**
   * For a failed action: whether it may have taken effect anyway (a click
   * sent but not confirmed). Never replay uncertain actions automatically.
   */
  readonly uncertain?: boolean;
  readonly error?: { readonly code: ErrorCode; readonly message: string };
  /** For `zoom`: the region as PNG. */
  readonly image?: Uint8Array;
}

/** The result of an ordered batch: it stops at the first failure. */
export interface ActOutcome {
  /** True when every action is `done`. */
  readonly ok: boolean;
  readonly results: readonly ActionResult[];
}
