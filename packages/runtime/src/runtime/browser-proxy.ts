import type { DesktopOptions } from "@agent-computer/core";

/** An upstream proxy for a bot's browser (`DesktopOptions["proxy"]`). */
export type BrowserProxy = NonNullable<DesktopOptions["proxy"]>;

/**
 * Which upstream proxy a bot's browser uses, asked each time the bot's
 * desktop starts: for its runs, the agent tools and a person's screen or
 * terminal alike, so it holds across teardowns, replacements and new runs.
 * `undefined`: the browser goes direct. The credentials reach only the
 * in-computer relay (docs/architecture.md §4), never argv or a log.
 */
export type BrowserProxyResolver = (bot: {
  readonly computerId: string;
  readonly botId: string;
}) => BrowserProxy | undefined | Promise<BrowserProxy | undefined>;
