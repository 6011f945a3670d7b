import type { ActOutcome } from "./act-outcome.js";
import type { DesktopAction } from "./desktop-action.js";
import type { Observation } from "./observation.js";
import type { OpContext } from "./op-context.js";
import type { PageBrowser } from "./page-browser.js";
import type { DesktopActOptions } from "./page-secret.js";
import type { ScreenEndpoint } from "./screen-endpoint.js";
import type { TerminalEndpoint } from "./terminal-endpoint.js";

/** One bot's desktop on one machine. */
export interface DesktopSession {
  readonly botId: string;
  /** The X display slot (":100", ":101", ...) or the provider's equivalent. */
  readonly display: string;
  /** A screenshot with its size, cursor and frame hash. */
  observe(ctx?: OpContext, opts?: { includeImage?: boolean }): Promise<Observation>;
  /**
   * Runs an ordered batch, stopping at the first failure. A `type_secret`
   * action needs its value in `options.secrets`; a desktop that cannot
   * type one safely fails it with UNSUPPORTED.
   */
  act(actions: DesktopAction[], ctx?: OpContext, options?: DesktopActOptions): Promise<ActOutcome>;
  /** Where the provider has `capabilities.pageBrowser`. */
  readonly pageBrowser?: PageBrowser;
  /**
   * Starts a program on this desktop (its window opens on the bot's
   * display), without waiting for it to exit. Where absent, opening files
   * and launching apps are UNSUPPORTED.
   */
  launch?(argv: string[], ctx?: OpContext): Promise<void>;
  /**
   * Opens a file or folder of the computer (an absolute path the caller
   * resolved inside the home) on this desktop, in what shows it. Where
   * absent, `launch(["xdg-open", path])` does.
   */
  open?(path: string, ctx?: OpContext): Promise<void>;
  /**
   * A capability for a person to watch or control this desktop, valid for
   * `ttlMs` (the provider's default when absent). View capabilities never
   * carry input.
   */
  screenEndpoint(mode: "view" | "control", ctx?: OpContext, opts?: { ttlMs?: number }): Promise<ScreenEndpoint>;
  /** A shell on this desktop for a person in control, through the same gateway. */
  terminalEndpoint?(ctx?: OpContext, opts?: { ttlMs?: number }): Promise<TerminalEndpoint>;
  /**
   * Ends a screen or terminal capability by id: the gateway drops its
   * connections and refuses it from then on. Idempotent.
   */
  revokeEndpoint?(id: string, ctx?: OpContext): Promise<void>;
  /** Frees the display slot; the bot's browser profile stays. */
  release(ctx?: OpContext): Promise<void>;
}
