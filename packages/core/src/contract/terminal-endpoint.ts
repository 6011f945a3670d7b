/**
 * A websocket to a shell in the bot's desktop session, reached through the
 * same gateway and the same sealing as a control screen.
 */
export interface TerminalEndpoint {
  /** The capability's id in the gateway: not a secret, safe to log. */
  readonly id: string;
  /** `ws://<host>:<port>/terminals/<id>`: a provider address, never logged or shown to a browser. */
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>`. A secret. */
  readonly token: string;
  readonly expiresAt: number;
}
