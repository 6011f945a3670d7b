import { CliError } from "./cli-error.js";

/**
 * The line a failed verb ends with, for the `desktop` command and the
 * resident service alike: a reported failure keeps its code; anything else
 * is UNAVAILABLE and its details stay in the computer (stderr or the
 * gateway's log), never in the answer.
 */
export function errorLine(error: unknown): Record<string, unknown> {
  if (error instanceof CliError) return { ok: false, error: { code: error.code, message: error.message } };
  return { ok: false, error: { code: "UNAVAILABLE", message: "The desktop command crashed; see its stderr." } };
}
