import type { Logger } from "@agent-computer/core";
import type { ScreenAuthority } from "./authority/screen-authority.js";
import type { ScreenEvent } from "./screen-event.js";

/** Options of `createScreens`. */
export interface ScreensOptions {
  /** Where endpoints come from and whether a screen may still be shown. */
  authority: ScreenAuthority;
  /**
   * 32 random bytes that seal capabilities (e.g.
   * `Buffer.from(process.env.SCREENS_SECRET, "base64")`). Every process that
   * serves the proxy for the same capabilities needs the same secret;
   * changing it invalidates every capability issued before.
   */
  secret: Uint8Array;
  /** Receives each event's type as the message and the rest as fields. Default: silent. */
  logger?: Logger;
  /** Receives every event. Errors it throws are ignored. */
  onEvent?: (event: ScreenEvent) => void;
  /**
   * The path prefix the app mounts screens under: capabilities are
   * `<publicPath>/c/<sealed>` (screens) and `<publicPath>/t/<sealed>`
   * (terminals), the pages `<publicPath>/viewer` and `<publicPath>/terminal`.
   * Default "/screens".
   */
  publicPath?: string;
  /** Largest websocket frame accepted from a browser; a larger one closes that socket (1009). Default 1 MiB. */
  maxClientFrameBytes?: number;
  /**
   * Bytes queued towards one side before the proxy stops reading from the
   * other, so a slow browser holds back only its own stream. Default 4 MiB.
   */
  maxBufferedBytes?: number;
  /** How often live control and terminal sockets re-ask the authority, in ms. Default 1000. */
  controlCheckIntervalMs?: number;
  /** How long a live control or terminal socket survives an UNAVAILABLE authority, in ms. Default 5000. */
  controlUnavailableGraceMs?: number;
  /** How long `authority.check` may take before it counts as unavailable, in ms. Default 10000. */
  authorityTimeoutMs?: number;
  /** How long connecting to the gateway may take, in ms. Default 10000. */
  upstreamHandshakeTimeoutMs?: number;
  /**
   * The viewer and terminal pages' CSP `frame-ancestors`: who may embed them. Default
   * "'self'" (the app serves its UI and the viewer from one origin); give
   * the app's origins when its UI lives elsewhere.
   */
  viewerFrameAncestors?: string;
  /** The wall clock, for tests. Default `Date.now`. */
  clock?: () => number;
}
