import type { ProcessIdentity } from "./process-status.js";

/**
 * What the computer remembers about one display slot, in its state folder.
 * A slot is reserved from the moment a start claims it until its teardown
 * succeeded, so no other bot can be given a display that is still in use.
 */
export interface DisplaySlotRecord {
  readonly bot: string;
  /** 0 for display :100, 1 for :101, ... */
  readonly slot: number;
  readonly width: number;
  readonly height: number;
  /** Chromium's DevTools port on 127.0.0.1. */
  readonly cdpPort: number;
  /**
   * `starting`: claimed, processes coming up; `running`: ready;
   * `quiesced`: the browser was closed cleanly for an export (X stays up);
   * `stopping`: a teardown began or failed and may be retried.
   */
  status: "starting" | "running" | "quiesced" | "stopping";
  /** The `desktop start` process that claimed the slot (a dead one means the start was cut). */
  starter?: ProcessIdentity;
  xserver?: ProcessIdentity;
  windowManager?: ProcessIdentity;
  browser?: ProcessIdentity;
  /** Why the last teardown failed, for a person reading `desktop list`. */
  lastError?: string;
}
