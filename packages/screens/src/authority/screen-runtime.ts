import type { DesktopSession } from "@agent-computer/core";
import type { LeaseEngine } from "@agent-computer/leases";
import type { ComputerEvent } from "@agent-computer/runtime";

/**
 * The parts of a `ComputerRuntime` that `runtimeScreenAuthority` uses; a
 * `ComputerRuntime` is one.
 */
export interface ScreenRuntime {
  /** The bot's desktop, starting the computer and the desktop when needed. */
  desktopFor(input: { computerId: string; botId: string }): Promise<DesktopSession>;
  /** Lifecycle events; `takeover-ended` carries `detail.botId`. */
  on(listener: (event: ComputerEvent) => void): () => void;
  readonly leases: Pick<LeaseEngine, "assertCurrent" | "getComputer">;
  /** Records a use of the computer now (an open screen or terminal), so idle time counts from here. */
  noteUse?(computerId: string): Promise<void>;
}
