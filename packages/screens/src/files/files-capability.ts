/**
 * A Files window's capability, as the app hands it to a browser. A bearer
 * credential until it expires or is revoked: do not log `token` or `pageUrl`.
 */
export interface FilesCapability {
  /** Random, not a secret: pass it to `revoke`. */
  readonly id: string;
  /** view: list, preview and download; control: upload too. */
  readonly mode: "view" | "control";
  /** The sealed blob the page sends as `Authorization: Bearer <token>`. */
  readonly token: string;
  /**
   * The Files page for it: `<publicPath>/page#c=<token>&mode=<mode>`. The
   * capability rides in the fragment, which browsers never send to a
   * server or put in a Referer. Put it in an iframe's `src`.
   */
  readonly pageUrl: string;
  /** Milliseconds since the epoch after which it is refused. */
  readonly expiresAt: number;
}
