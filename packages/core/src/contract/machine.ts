import type { DesktopOptions } from "./desktop-options.js";
import type { DesktopSession } from "./desktop-session.js";
import type { ExecRequest } from "./exec-request.js";
import type { ExecResult } from "./exec-result.js";
import type { MachineFiles } from "./machine-files.js";
import type { OpContext } from "./op-context.js";
import type { ProviderRef } from "./provider-ref.js";

/** One machine at a provider, as returned by `provision` or `reconnect`. */
export interface Machine {
  /** Pass back to `reconnect` of the same provider kind. */
  readonly ref: ProviderRef;
  /** The home inside the machine, absolute. */
  readonly workspacePath: string;
  /**
   * Runs a command. A non-zero exit is a result; a timeout kills the process
   * tree and sets `timedOut`; aborting kills it and throws ABORTED.
   */
  exec(req: ExecRequest, ctx?: OpContext): Promise<ExecResult>;
  readonly files: MachineFiles;
  /** A URL that reaches `port` inside the machine. */
  portUrl?(port: number, opts: { private: boolean }, ctx?: OpContext): Promise<string>;
  /**
   * Where the provider has `capabilities.desktop`: that bot's desktop,
   * started lazily. MULTI_SCREEN_UNAVAILABLE beyond the spec's `screenLimit`.
   */
  openDesktop?(botId: string, ctx?: OpContext, opts?: DesktopOptions): Promise<DesktopSession>;
  /** Pauses desktops so an export sees consistent profiles; returns resume. */
  quiesceDesktops?(ctx?: OpContext): Promise<() => Promise<void>>;
  /** Suspends the machine; see `capabilities.stopKeepsMachine`. */
  stop(ctx?: OpContext): Promise<void>;
  /** Removes the machine for good. A mounted home stays with its owner. */
  destroy(ctx?: OpContext): Promise<void>;
}
