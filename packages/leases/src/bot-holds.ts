/**
 * Which bots of a computer hold a live lease now, by the store's clock:
 * what every worker sharing the store sees (`LeaseEngine.botHolds`).
 */
export interface BotHolds {
  /** Bots whose execution lease is live: a run drives them, on some worker. */
  readonly executing: readonly string[];
  /** Bots whose screen a person controls (a live user-control lease). */
  readonly controlled: readonly string[];
  /**
   * Each bot's latest user-control token (0: never taken over), held or
   * not: a run waiting for a takeover on one worker sees a person's
   * takeover through another end when the token moved past the one it saw.
   */
  readonly controlTokens: Readonly<Record<string, number>>;
}
