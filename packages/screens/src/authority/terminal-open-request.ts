import type { Lease } from "@agent-computer/leases";

/** What `ScreenAuthority.openTerminal` is asked for when a terminal capability is issued. */
export interface TerminalOpenRequest {
  readonly computerId: string;
  readonly botId: string;
  /** How long the gateway endpoint should stay valid, in milliseconds. */
  readonly ttlMs: number;
  /** The user-control lease (kind "user-control", this computer and bot): a terminal is control. */
  readonly control: Lease;
  /**
   * The gateway id of a live control screen endpoint of this bot, issued by
   * these screens under the same lease: the terminal lives under it and ends
   * with it. Absent: the desktop grants the terminal a control endpoint of
   * its own.
   */
  readonly controlId?: string;
}
