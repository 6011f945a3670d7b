import type { Lease } from "@agent-computer/leases";

/** What `ScreenAuthority.open` is asked for when a capability is issued. */
export interface ScreenOpenRequest {
  readonly computerId: string;
  readonly botId: string;
  readonly mode: "view" | "control";
  /** How long the gateway endpoint should stay valid, in milliseconds. */
  readonly ttlMs: number;
  /**
   * The user-control lease (kind "user-control", this computer and bot):
   * required for control, absent for view.
   */
  readonly control?: Lease;
}
