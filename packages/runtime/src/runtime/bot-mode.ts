/**
 * Where a bot works: its workspace's Team computer, in `bots/<bot-id>/`, or
 * a Private computer of its own, whose whole home is its folder.
 */
export type BotMode = "team" | "private";

/** What a mode-change operation moves: one bot of a workspace, to `to`. */
export interface ModeChange {
  readonly workspaceId: string;
  readonly botId: string;
  readonly to: BotMode;
  /** The computer the bot's files move to; the operation's `computerId` is the one they leave. */
  readonly targetComputerId: string;
}
