import type { ScreenPolicy } from "./screen-policy.js";

/**
 * What screens report through `onEvent` and the logger (the logger gets the
 * type as its message, the rest as fields). Secret-free by construction:
 * ids, policy, reasons, numbers; never a capability URL or sealed blob, a
 * token, a provider host or URL, a cookie or a header.
 *
 * `connectionId` is random per socket or HTTP request; `capabilityId` ties a
 * socket to the capability it used (known once the seal opened); `policy` is
 * null when the request never got as far as naming a screen.
 */
export type ScreenEvent =
  | {
      readonly type: "screen.capability.issued";
      readonly at: number;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy;
      readonly expiresAt: number;
    }
  | {
      readonly type: "screen.capability.revoked";
      readonly at: number;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy | null;
      /** Live sockets of this capability that were closed. */
      readonly closedConnections: number;
      /** Whether the gateway endpoint was revoked too (only the issuing process can). */
      readonly endpointRevoked: boolean;
    }
  | {
      readonly type: "screen.proxy.target_rejected";
      readonly at: number;
      readonly connectionId: string;
      readonly capabilityId: string | null;
      readonly policy: ScreenPolicy | null;
      readonly reason:
        | "invalid_path" // not `<publicPath>/c/<sealed>` or `/t/<sealed>`: bad characters, `..`, wrong prefix
        | "invalid_request" // not a websocket upgrade (method, headers)
        | "invalid_capability" // the seal does not open: tampered, truncated, forged, another secret
        | "wrong_route" // a screen capability at `/t/` or a terminal one at `/c/`
        | "capability_expired"
        | "capability_revoked"
        | "authority_rejected" // FENCED_OUT, LEASE_LOST, NOT_FOUND
        | "authority_unavailable" // UNAVAILABLE, TIMEOUT, or no answer in time
        | "invalid_authority_response"; // anything else thrown or returned
      /** The HTTP status the client was refused with. */
      readonly status: number;
    }
  | {
      readonly type: "screen.proxy.http_failed";
      readonly at: number;
      readonly connectionId: string;
      readonly policy: null;
      readonly status: number;
      readonly reason: "not_found" | "method_not_allowed" | "upgrade_required" | "asset_unreadable";
    }
  | {
      readonly type: "screen.proxy.websocket_handshake_failed";
      readonly at: number;
      readonly connectionId: string;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy;
      /** The gateway refused (see `upstreamStatus`), could not be reached, or the client left first. */
      /** `upstream_unproven`: the gateway did not prove it holds the capability (nothing was sent to it). */
      readonly reason: "upstream_refused" | "upstream_unreachable" | "upstream_unproven" | "client_gone";
      /** The gateway's HTTP status when it answered one (401, 404, 410, ...). */
      readonly upstreamStatus: number | null;
      readonly durationMs: number;
    }
  | {
      /** The gateway answered one of the proxy's HTTP requests: its challenge GET, or the websocket upgrade. */
      readonly type: "screen.proxy.http_upstream_response";
      readonly at: number;
      readonly connectionId: string;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy;
      readonly stage: "challenge" | "upgrade";
      /** 401 with a challenge, 101 for an upgrade; anything else is a refusal. */
      readonly status: number;
      /** Since the browser's upgrade request reached the proxy. */
      readonly durationMs: number;
    }
  | {
      /** A bridged socket failed (a reset, a protocol error): its close event follows. */
      readonly type: "screen.proxy.websocket_error";
      readonly at: number;
      readonly connectionId: string;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy;
      readonly side: "client" | "upstream";
      /** The error's code (`ECONNRESET`, `WS_ERR_…`), never its message. */
      readonly code: string;
    }
  | {
      readonly type: "screen.proxy.websocket_upgraded";
      readonly at: number;
      readonly connectionId: string;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy;
    }
  | {
      readonly type: "screen.proxy.websocket_closed";
      readonly at: number;
      readonly connectionId: string;
      readonly capabilityId: string;
      readonly policy: ScreenPolicy;
      /**
       * The RFB handshake finished: the client's ClientInit went up and the
       * gateway answered. For a terminal: the gateway (the shell) sent something.
       */
      readonly handshakeCompleted: boolean;
      readonly durationMs: number;
      /**
       * Who ended it: the browser, the gateway, a revocation (of it, or for
       * a terminal of the control screen it lives under; or the authority
       * no longer allowing control), or the proxy itself (an
       * oversized frame, a view-mode protocol violation, `Screens.close`).
       */
      readonly closer: "client" | "upstream" | "revoked" | "proxy";
      /** The websocket close code sent to the browser. */
      readonly code: number;
      /** Client bytes held back in view mode (input events). */
      readonly droppedClientBytes: number;
    };
