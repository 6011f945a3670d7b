import type { ScreenAuthorityChange } from "./screen-authority-change.js";
import type { ScreenCheckRequest } from "./screen-check-request.js";
import type { ScreenGrant } from "./screen-grant.js";
import type { ScreenOpenRequest } from "./screen-open-request.js";
import type { TerminalGrant } from "./terminal-grant.js";
import type { TerminalOpenRequest } from "./terminal-open-request.js";

/**
 * The port through which screens ask the app's runtime for gateway
 * endpoints and whether a screen may still be shown. `runtimeScreenAuthority`
 * fills it from a `ComputerRuntime`; an app with its own policy (workspace
 * membership, roles) wraps that one or writes its own.
 *
 * Errors are `AgentComputerError`s: FENCED_OUT, LEASE_LOST or NOT_FOUND mean
 * "not allowed" (the socket is refused or closed); UNAVAILABLE or TIMEOUT
 * mean "cannot tell now" (refused; a live control socket gets a short grace).
 * Anything else thrown or returned counts as a malformed answer and is
 * refused too: the proxy fails closed.
 */
export interface ScreenAuthority {
  /**
   * At issue time: a gateway endpoint for this screen in this mode (starting
   * the computer and the bot's desktop when needed). For control, throws
   * unless `control` is the current user-control lease of this screen.
   */
  open(request: ScreenOpenRequest): Promise<ScreenGrant>;
  /**
   * Optional (without it, terminals are UNSUPPORTED): at issue time, a
   * gateway endpoint for a shell on this bot's desktop. Throws unless
   * `control` is the current user-control lease of this screen. Live
   * terminal sockets are then checked like control sockets (`check` with
   * mode "control" and kind "terminal").
   */
  openTerminal?(request: TerminalOpenRequest): Promise<TerminalGrant>;
  /**
   * Resolves (with nothing) while the screen may be shown in this mode;
   * throws otherwise. Called before a socket is bridged, and about every
   * second plus on `watch` changes while a control or terminal socket is open.
   */
  check(request: ScreenCheckRequest): Promise<void>;
  /**
   * Optional: reports changes that may end live control and terminal sockets, so they
   * close at once rather than at the next periodic check. Returns the
   * unsubscribe function.
   */
  watch?(listener: (change: ScreenAuthorityChange) => void): () => void;
  /**
   * Optional: a screen or terminal socket of this computer is open, so a
   * person uses it. Called when a socket is bridged, every
   * `SCREEN_USE_NOTE_MS` while it stays open, and when it closes; the
   * runtime's authority counts it as use, so an open screen keeps its
   * computer from idle suspension until the idle time after it closed.
   * Its failures are ignored.
   */
  inUse?(request: { readonly computerId: string; readonly botId: string }): Promise<void>;
}

/** How often an open screen or terminal socket is reported as use (`ScreenAuthority.inUse`). */
export const SCREEN_USE_NOTE_MS = 60_000;
