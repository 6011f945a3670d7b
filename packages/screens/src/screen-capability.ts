/**
 * A capability as the app hands it to a browser. Holds no provider host,
 * token or credential: the screen behind it is sealed into `url`.
 */
export interface ScreenCapability {
  /** Random, not a secret: pass it to `revoke`, find it in events. */
  readonly id: string;
  readonly mode: "view" | "control";
  /**
   * The websocket path the viewer connects to, relative to the app's origin:
   * `<publicPath>/c/<sealed>`. A bearer credential until it expires: do
   * not log it.
   */
  readonly url: string;
  /**
   * The viewer page for it: `<publicPath>/viewer#c=<sealed>&mode=<mode>`. The
   * capability rides in the fragment, which browsers never send to a
   * server or put in a Referer. Put it in an iframe's `src`.
   */
  readonly viewerUrl: string;
  /** Milliseconds since the epoch after which it is refused. */
  readonly expiresAt: number;
}
