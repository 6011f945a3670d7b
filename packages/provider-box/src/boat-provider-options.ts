import { z } from "zod";
import { BOAT_API_URL } from "./boat-client.js";

export const boatProviderOptionsSchema = z.object({
  /** The account's API key (a bearer token `boat_…`; never logged or put in an error). Default: BOAT_API_KEY, else BOX_API_KEY. */
  apiKey: z.string().min(1),
  /**
   * The API's base URL (default: BOAT_API_URL, else BOX_API_URL, else
   * Boat's `https://boat.dev/api/v1`). The legacy Box base
   * (`https://ascii.dev/api/box/v1`) is spoken with its `/boxes` paths.
   */
  baseUrl: z.string().url().default(BOAT_API_URL),
  /**
   * A named snapshot holding the computer's tools; sandboxes start from it
   * (`from`). Unset with `setup` given: the snapshot named after the
   * setup's hash, built once in the background (see the README). "auto"
   * without `setup` is UNSUPPORTED (no default setup is written yet).
   */
  snapshot: z.string().min(1).optional(),
  /**
   * The shell script that makes a fresh sandbox a computer (installs the
   * tools; run as the sandbox's user from `/`). New computers run it themselves
   * until the named snapshot built from it is ready.
   */
  setup: z.string().min(1).optional(),
  /** Longest a setup may run (each computer's and the snapshot build's). */
  setupTimeoutMs: z.number().int().positive().default(1_800_000),
  /**
   * How long an idle sandbox lives past its last use before the service's
   * auto-stop archives it (SandboxLifetime keeps the auto-stop this far
   * ahead while the computer is used).
   */
  ttlSeconds: z.number().int().min(1).max(2_592_000).default(7200),
  /** How often use moves the auto-stop (default: a quarter of `ttlSeconds`, between 1 s and 15 min). */
  ttlRefreshMs: z.number().int().positive().optional(),
  /**
   * Where the home lives inside the sandbox (every command's HOME): a
   * folder below the sandbox user's home, the only place the service
   * writes to and keeps across a stop. An import swaps the whole folder by
   * rename.
   */
  workspacePath: z
    .string()
    .regex(/^\/home\/user(\/[A-Za-z0-9._-]+)+$/, "a folder below /home/user, without a trailing slash")
    .default("/home/user/workspace"),
  /** Most desktops active at once when the spec does not say (0 = no cap). */
  screenLimit: z.number().int().nonnegative().default(0),
  /** How long provision and a resume may take before TIMEOUT. */
  startTimeoutMs: z.number().int().positive().default(300_000),
  /** One HTTP request's deadline. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
  /** How long calls that may be sent again are retried (429, 5xx, no answer; see the README) before UNAVAILABLE. */
  retryMs: z.number().int().nonnegative().default(60_000),
  /**
   * Maps a private route URL before callers get it (a deployment behind its
   * own gateway); the URL's `_token` query must be kept.
   */
  routeUrl: z.custom<(url: string) => string>((v) => typeof v === "function").optional(),
});

/** Options of `boatProvider`; see the README for each. */
export type BoatProviderOptions = z.input<typeof boatProviderOptionsSchema>;
export type ParsedBoatOptions = z.output<typeof boatProviderOptionsSchema>;
