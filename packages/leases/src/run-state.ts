/**
 * A bot's run as the caller of `takeover` knows it: `active` refuses the
 * takeover (BOT_BUSY), `waiting_takeover` (the bot asked for a person)
 * accepts it even while the bot holds its execution lease.
 */
export type RunState = "idle" | "active" | "waiting_takeover";
