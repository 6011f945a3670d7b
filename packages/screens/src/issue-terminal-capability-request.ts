import type { Lease } from "@agent-computer/leases";

/** Input of `Screens.issueTerminalCapability`. */
export interface IssueTerminalCapabilityRequest {
  readonly computerId: string;
  readonly botId: string;
  /** How long the capability can be used to connect, in milliseconds (at most 24 hours). */
  readonly ttlMs: number;
  /**
   * The user-control lease (from `runtime.takeover`) of this computer and
   * bot. There is no view terminal: a shell is control. Terminal sockets
   * close once the lease stops being current.
   */
  readonly control: Lease;
}
