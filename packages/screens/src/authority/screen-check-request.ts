import type { Lease } from "@agent-computer/core/lease";

/**
 * What `ScreenAuthority.check` is asked before a socket is bridged, and
 * about every second while a control socket stays open.
 */
export interface ScreenCheckRequest {
  readonly computerId: string;
  readonly botId: string;
  readonly mode: "view" | "control";
  /**
   * For control: the lease handed to `issueScreenCapability` (or to
   * `Screens.updateControl` since) when this process still holds it;
   * otherwise a frozen copy of its fields from the sealed capability
   * (`kind`, `key`, `holder`, `token`, `computerId`, `botId`, `expiresAt`),
   * which a lease engine does not accept as its own.
   */
  readonly control?: Lease;
}
