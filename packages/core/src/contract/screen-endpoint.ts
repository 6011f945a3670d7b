/**
 * One capability of a computer's screen gateway: a websocket to one
 * desktop in one mode. The host side (packages/screens) seals it so a
 * browser never sees `url` or `token`.
 */
export interface ScreenEndpoint {
  readonly mode: "view" | "control";
  /** The capability's id in the gateway: not a secret, safe to log. */
  readonly id: string;
  /**
   * The gateway's websocket URL for this capability
   * (`ws://<host>:<port>/screens/<id>`). It names a provider address: never
   * log it or hand it to a browser.
   */
  readonly url: string;
  /**
   * A secret. A client that checks the gateway first proves it holds the
   * token without sending it (gateway-proof.ts); `Authorization: Bearer
   * <token>` also works, for clients that do not.
   */
  readonly token: string;
  /** Milliseconds since the epoch after which the capability stops working. */
  readonly expiresAt: number;
}
