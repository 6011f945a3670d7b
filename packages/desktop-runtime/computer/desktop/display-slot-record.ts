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
   * Where DevTools is instead when it runs on a pipe (DEVTOOLS_TRANSPORT_ENV
   * "pipe"): the bridge's Unix socket in the slot's folder
   * (devtools-pipe-bridge.ts); `cdpPort` is then unused.
   */
  readonly devtoolsSocket?: string;
  /**
   * Random, new for every claim of a slot: screen capabilities are bound to
   * it, so a display given to another bot never serves an old capability.
   */
  readonly incarnation: string;
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
  /**
   * The `--proxy-server` Chromium got (an upstream without credentials, or
   * this bot's relay), so a browser restarted after a quiesce uses it again.
   */
  browserProxy?: string;
  /** The bot's loopback proxy relay (an upstream with credentials); it lives until the desktop stops. */
  proxyRelay?: ProcessIdentity;
  /** The 127.0.0.1 port the relay bound: derived from the profile path, or the next free one. */
  proxyRelayPort?: number;
  /** Why the last teardown failed, for a person reading `desktop list`. */
  lastError?: string;
  /**
   * What the display showed when the browser's window had to be mapped
   * again during its last start (desktop-lifecycle.ts, `mapAgain`); the
   * host logs it.
   */
  windowMappedAgain?: string;
}
