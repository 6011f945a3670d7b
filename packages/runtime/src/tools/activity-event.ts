/**
 * `computer.command`: one mutating tool call, for an app's activity feed.
 * Everything in it is redacted: commands and output tails pass through
 * `redactSecrets`, file contents never appear (only sizes).
 */
export interface ActivityEvent {
  readonly type: "computer.command";
  readonly tool: string;
  readonly computerId: string;
  readonly botId: string;
  /** What was done, e.g. the redacted command or `wrote bots/a/x.csv (120 bytes)`. */
  readonly summary: string;
  /** The redacted tail of the command's output, when it has one. */
  readonly outputTail?: string;
  readonly ok: boolean;
  /** The failure, when `ok` is false. */
  readonly error?: { readonly code: string; readonly message: string };
  readonly durationMs: number;
  /** Milliseconds since the epoch. */
  readonly at: number;
}
