/** A websocket to a shell in the bot's desktop session. */
export interface TerminalEndpoint {
  /** A capability URL: treat as a secret, never log it. */
  readonly url: string;
  readonly expiresAt: number;
}
