import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Lease } from "@agent-computer/leases";
import type { IssueScreenCapabilityRequest } from "./issue-screen-capability-request.js";
import type { IssueTerminalCapabilityRequest } from "./issue-terminal-capability-request.js";
import type { ScreenCapability } from "./screen-capability.js";
import type { ScreenRevocation } from "./screen-revocation.js";
import type { TerminalCapability } from "./terminal-capability.js";

/**
 * Live screens and terminals for an app: issues sealed capabilities,
 * revokes them, and serves the websocket proxy, the viewer page and the
 * terminal page from the app's own HTTP server. Made by `createScreens`.
 */
export interface Screens {
  /** The prefix everything is served under (default "/screens"). */
  readonly publicPath: string;
  /** The viewer page's path: `<publicPath>/viewer`. */
  readonly viewerPath: string;
  /** The terminal page's path: `<publicPath>/terminal`. */
  readonly terminalPath: string;

  /**
   * Asks the authority for a gateway endpoint and seals it. For control,
   * `control` must be the user-control lease of this computer and bot.
   * INVALID_ARGUMENT for bad input; the authority's own errors pass through.
   */
  issueScreenCapability(request: IssueScreenCapabilityRequest): Promise<ScreenCapability>;

  /**
   * A shell on the bot's desktop for the person in control: `control` must
   * be the user-control lease of this computer and bot (there is no view
   * terminal). Asks `authority.openTerminal`, under the live control screen
   * capability these screens issued for the same bot and lease when there
   * is one (the terminal then ends with it), and seals the endpoint. Its
   * sockets close once the lease stops being current. INVALID_ARGUMENT for
   * bad input; UNSUPPORTED when the authority has no `openTerminal`; the
   * authority's own errors pass through.
   */
  issueTerminalCapability(request: IssueTerminalCapabilityRequest): Promise<TerminalCapability>;

  /**
   * Ends a capability, given its id, its `url`, its `viewerUrl` or
   * `terminalUrl`, or the sealed blob: it is refused from now until it
   * expires, its live sockets close (both sides, within a second) with
   * closer "revoked", and the gateway endpoint is revoked when this process
   * issued it. A control screen's terminals end with it. Idempotent.
   * INVALID_ARGUMENT for a URL whose seal does not open here.
   */
  revoke(capabilityIdOrUrl: string): Promise<ScreenRevocation>;

  /**
   * After renewing a user-control lease (`leases.renew` returns a new
   * object), hand the renewed lease here so live control capabilities
   * issued under the same key and token check against it. Returns how many
   * capabilities it now backs.
   */
  updateControl(lease: Lease): number;

  /**
   * Call from the server's `upgrade` event. Returns false, touching nothing,
   * for a path outside `publicPath`; otherwise takes the socket: refuses it
   * with an HTTP status, or bridges it to the gateway.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;

  /**
   * Call from the server's `request` event. Returns false, touching nothing,
   * for a path outside `publicPath`; otherwise answers it: the viewer page
   * and its noVNC modules, the terminal page and its xterm files, 426 for a
   * capability path, 404 for the rest.
   */
  handleRequest(request: IncomingMessage, response: ServerResponse): boolean;

  /** Closes every live socket (closer "proxy") and stops watching the authority. */
  close(): Promise<void>;
}
