import type { Lease } from "@agent-computer/leases";

/** Input of `Files.issueFilesCapability`. */
export interface IssueFilesCapabilityRequest {
  readonly computerId: string;
  /** The bot whose folder the window opens on (`bots/<bot>/`) and where uploads land. */
  readonly botId: string;
  /** view: list, preview, download; control: upload too. */
  readonly mode: "view" | "control";
  /** How long it can be used, in milliseconds (at most 24 hours). */
  readonly ttlMs: number;
  /** For control: the user-control lease (from `runtime.takeover`) of this computer and bot; uploads stop when it ends. */
  readonly control?: Lease;
}
