import { z } from "zod";
import { DEFAULT_CONFIRM_DELETE_HEADER } from "./box-client.js";

export const boxProviderOptionsSchema = z.object({
  /** The account's API key (a bearer token; never logged or put in an error). */
  apiKey: z.string().min(1),
  /** The API's base URL: the service's (from its API reference), or the emulator's. */
  baseUrl: z.string().url(),
  /** The header that confirms a DELETE, as the service's API reference names it. */
  confirmDeleteHeader: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]*$/)
    .default(DEFAULT_CONFIRM_DELETE_HEADER),
  /**
   * A named snapshot holding the computer's tools; boxes start from it
   * (`from`). Unset with `setup` given: the snapshot named after the
   * setup's hash, built once in the background (see the README). "auto"
   * without `setup` is UNSUPPORTED (no default setup is written yet).
   */
  snapshot: z.string().min(1).optional(),
  /**
   * The shell script that makes a fresh box a computer (installs the
   * tools; run as the box's user from `/`). New computers run it themselves
   * until the named snapshot built from it is ready.
   */
  setup: z.string().min(1).optional(),
  /** Longest a setup may run (each computer's and the snapshot build's). */
  setupTimeoutMs: z.number().int().positive().default(1_800_000),
  /** The box's lifetime; refreshed while the computer is in use, so an idle box archives after it. */
  ttlSeconds: z.number().int().min(1).max(2_592_000).default(7200),
  /** How often use refreshes the TTL (default: a quarter of the TTL, between 1 s and 15 min). */
  ttlRefreshMs: z.number().int().positive().optional(),
  /**
   * Where the home lives inside the box (every command's HOME). A folder
   * below the user's home: an import swaps the whole folder by rename.
   */
  workspacePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*\/[A-Za-z0-9._-]+$/, "an absolute path below a folder, without a trailing slash")
    .default("/home/computer/workspace"),
  /** Most desktops active at once when the spec does not say (0 = no cap). */
  screenLimit: z.number().int().nonnegative().default(0),
  /** How long provision and a resume may take before TIMEOUT. */
  startTimeoutMs: z.number().int().positive().default(300_000),
  /** One HTTP request's deadline. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
  /** How long 429, 5xx and requests without an answer are retried before UNAVAILABLE. */
  retryMs: z.number().int().nonnegative().default(60_000),
  /**
   * Maps a private route URL before callers get it (a deployment behind its
   * own gateway); the URL's `_token` query must be kept.
   */
  routeUrl: z.custom<(url: string) => string>((v) => typeof v === "function").optional(),
});

/** Options of `boxProvider`; see the README for each. */
export type BoxProviderOptions = z.input<typeof boxProviderOptionsSchema>;
export type ParsedBoxOptions = z.output<typeof boxProviderOptionsSchema>;
