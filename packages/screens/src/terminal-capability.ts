/**
 * A terminal capability as the app hands it to a browser: a shell on the
 * bot's desktop for the person in control. Holds no provider host, token or
 * credential: the gateway endpoint behind it is sealed into `url`.
 */
export interface TerminalCapability {
  /** Random, not a secret: pass it to `revoke`, find it in events. */
  readonly id: string;
  /**
   * The websocket path the terminal page connects to, relative to the app's
   * origin: `<publicPath>/t/<sealed>`. A bearer credential until it
   * expires: do not log it.
   */
  readonly url: string;
  /**
   * The terminal page for it: `<publicPath>/terminal#c=<sealed>`. The
   * capability rides in the fragment, which browsers never send to a
   * server or put in a Referer. Put it in an iframe's `src`.
   */
  readonly terminalUrl: string;
  /** Milliseconds since the epoch after which it is refused. */
  readonly expiresAt: number;
  /**
   * The live control screen capability (issued by these screens under the
   * same lease) this terminal lives under: revoking that one ends this one
   * too. Null when the desktop granted the terminal its own control.
   */
  readonly screenCapabilityId: string | null;
}
