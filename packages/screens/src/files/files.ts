import type { IncomingMessage, ServerResponse } from "node:http";
import type { Lease } from "@agent-computer/leases";
import type { ActivityEvent } from "@agent-computer/runtime";
import type { FilesCapability } from "./files-capability.js";
import type { IssueFilesCapabilityRequest } from "./issue-files-capability-request.js";

/**
 * A person's Files window beside a bot's screen and terminal
 * (docs/architecture.md §7): sealed capabilities, the HTTP API (list,
 * preview, download, upload) and the embeddable page, mounted on the app's
 * own server. Made by `createFiles`.
 */
export interface Files {
  /** The prefix everything is served under (default "/files"). */
  readonly publicPath: string;
  /** The page: `<publicPath>/page`. */
  readonly pagePath: string;
  /**
   * Seals a capability for one bot's files on one computer. View lists,
   * previews and downloads; control uploads too and needs the user-control
   * lease. INVALID_ARGUMENT for bad input, NOT_FOUND for a computer never made.
   */
  issueFilesCapability(request: IssueFilesCapabilityRequest): Promise<FilesCapability>;
  /** Refuses a capability (its id, token or pageUrl) from now on. Idempotent. */
  revoke(capabilityIdOrUrl: string): void;
  /** After renewing a user-control lease, hand the renewed lease here. Returns how many capabilities it backs. */
  updateControl(lease: Lease): number;
  /**
   * Tells open pages of that computer to refresh now: pass every
   * `computer.command` event of the bots (the tools' `onActivity`).
   */
  notify(event: Pick<ActivityEvent, "computerId">): void;
  /**
   * Call from the server's `request` event. Returns false, touching
   * nothing, for a path outside `publicPath`; otherwise answers it.
   */
  handleRequest(request: IncomingMessage, response: ServerResponse): boolean;
  /** Ends the pages' event streams. */
  close(): void;
}
