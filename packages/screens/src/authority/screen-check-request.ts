import type { Lease } from "@agent-computer/leases";

/**
 * What `ScreenAuthority.check` is asked before a socket is bridged, and
 * about every second while a control or terminal socket stays open.
 */
export interface ScreenCheckRequest {
  readonly computerId: string;
  readonly botId: string;
  /** A terminal is checked as control: it needs the same lease. */
  readonly mode: "view" | "control";
  /**
   * What the socket carries: the screen, or (always with mode "control") a
   * terminal. The proxy always sets it; absent means "screen".
   */
  readonly kind?: "screen" | "terminal";
  /**
   * For control: the lease handed to `issueScreenCapability` or
   * `issueTerminalCapability` (or to `Screens.updateControl` since) when
   * this process still holds it;
   * otherwise a frozen copy of its fields from the sealed capability
   * (`kind`, `key`, `holder`, `token`, `computerId`, `botId`, `expiresAt`),
   * which a lease engine does not accept as its own.
   */
  readonly control?: Lease;
}
