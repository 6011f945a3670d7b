import type { Lease } from "@agent-computer/leases";

/** Input of `Screens.issueScreenCapability`. */
export interface IssueScreenCapabilityRequest {
  readonly computerId: string;
  readonly botId: string;
  /** View never carries input; control needs the user-control lease. */
  readonly mode: "view" | "control";
  /** How long the capability can be used to connect, in milliseconds (at most 24 hours). */
  readonly ttlMs: number;
  /**
   * The user-control lease (from `runtime.takeover`) of this computer and
   * bot: required for control, refused for view. Control sockets close once
   * it stops being current.
   */
  readonly control?: Lease;
}
