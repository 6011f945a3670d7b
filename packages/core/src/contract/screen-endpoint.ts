/** A websocket a viewer connects to, for one desktop in one mode. */
export interface ScreenEndpoint {
  readonly mode: "view" | "control";
  /** A capability URL: treat as a secret, never log it. */
  readonly url: string;
  /** Milliseconds since the epoch after which the capability stops working. */
  readonly expiresAt: number;
}
