import { CliError } from "./cli-error.js";

/**
 * The `desktop` command's flags: `--name value`, `--name=value`, or a bare
 * `--name` (then "true"). A value that may itself start with `--` (a
 * capability id is base64url, so 1 in 4,096 begins with `--`; a page
 * expression can be anything) must come as `--name=value`: in the spaced form
 * it would read as the next flag. The host side sends those that way
 * (src/desktop/linux-desktop-session.ts).
 */
export function parseCliOptions(argv: readonly string[], usage: string): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith("--"))
      throw new CliError("INVALID_ARGUMENT", `Unexpected argument "${arg.slice(0, 40)}". ${usage}`);
    const equals = arg.indexOf("=");
    if (equals > 2) {
      out.set(arg.slice(2, equals), arg.slice(equals + 1));
      continue;
    }
    const next = argv[i + 1];
    if (next === undefined || next.startsWith("--")) out.set(arg.slice(2), "true");
    else {
      out.set(arg.slice(2), next);
      i++;
    }
  }
  return out;
}

/**
 * An integer option from its text: `fallback` when absent, INVALID_ARGUMENT
 * naming it (`what`) when not a whole number from `min` to `max` (a
 * `Number(...) || 0` would take "-5" or "2.5" as a limit, and "abc" as none).
 */
export function integerOption(
  raw: string | undefined,
  what: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (raw === undefined) return fallback;
  const n = raw.trim() === "" ? Number.NaN : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CliError("INVALID_ARGUMENT", `${what} must be an integer from ${min} to ${max}.`);
  }
  return n;
}
