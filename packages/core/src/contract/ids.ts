import { z } from "zod";

/**
 * A bot id names the bot's folder (`bots/<bot-id>/`), its browser profile
 * (`.browser-profiles/<bot-id>/`), the argument of in-computer commands and a
 * Private computer's `bot-id` label (docs/architecture.md §2), so it stays
 * plain: 1-64 letters, digits, `.`, `_` or `-`, a letter or digit first (so
 * never `.`, `..` or an option). These are the characters a Kubernetes label
 * value takes; `labelValueOf` shortens the few ids too long for one.
 */
export const BOT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The bot id rule as a zod schema; see `BOT_ID_PATTERN`. */
export const botIdSchema = z
  .string()
  .regex(BOT_ID_PATTERN, "a bot id: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");

/** The id of a workspace whose bots share a Team computer: the bot id rule, since both go into computer ids. */
export const workspaceIdSchema = z
  .string()
  .regex(BOT_ID_PATTERN, "a workspace id: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");

/**
 * A computer id: the key of its record, leases and machines. Any 1-256
 * characters: the runtime makes its own with `computerIdFor`, and an app
 * may bring ids of its own. Nothing may read a computer's scope or owner
 * out of its id; they live in its record.
 */
export const computerIdSchema = z.string().min(1, "a computer id of at least 1 character").max(256);

/**
 * A home key names the folder a home lives in (`DATA_DIR/homes/<home-key>`)
 * and its objects in a bucket: 1-128 letters, digits, `.`, `_` or `-`, a
 * letter or digit first.
 */
export const HOME_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The home key rule as a zod schema; see `HOME_KEY_PATTERN`. */
export const homeKeySchema = z
  .string()
  .regex(HOME_KEY_PATTERN, "a home key of letters, digits, '.', '_' and '-' (at most 128)");

/** Whether `value` is a valid bot id (`BOT_ID_PATTERN`). */
export function isBotId(value: unknown): value is string {
  return typeof value === "string" && BOT_ID_PATTERN.test(value);
}

/** Whether `value` is a valid home key (`HOME_KEY_PATTERN`). */
export function isHomeKey(value: unknown): value is string {
  return typeof value === "string" && HOME_KEY_PATTERN.test(value);
}
