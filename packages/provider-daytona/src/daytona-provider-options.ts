import { z } from "zod";

/** What a signed preview URL the API returned carries; `previewUrl` may map it. */
export interface SignedPreview {
  readonly sandboxId: string;
  readonly port: number;
  readonly url: string;
  readonly token: string;
}

export const daytonaProviderOptionsSchema = z.object({
  /** The organization's API key (sent as a bearer token; never logged or put in an error). */
  apiKey: z.string().min(1),
  /**
   * The API's base URL (default https://app.daytona.io/api). Always passed to
   * the SDK explicitly: left to itself it reads DAYTONA_API_URL from the
   * process environment and refuses to start when a `.env` also sets it.
   */
  apiUrl: z.string().url().default("https://app.daytona.io/api"),
  /** The region sandboxes are created in ("us", "eu"); the API's default when unset. */
  target: z.string().min(1).optional(),
  /**
   * A snapshot built from the computer image (see the README). Wins over
   * `image`; with neither, sandboxes are built from `computerImageRef()`.
   */
  snapshot: z.string().min(1).optional(),
  /** An image to build sandboxes from (a spec's `image` wins). */
  image: z.string().min(1).optional(),
  /** CPU cores, memory and disk in GiB when a spec has no resources. */
  resources: z
    .object({
      cpu: z.number().int().positive().optional(),
      memory: z.number().int().positive().optional(),
      disk: z.number().int().positive().optional(),
    })
    .default({}),
  /** Extra environment for every sandbox. */
  envVars: z.record(z.string(), z.string()).default({}),
  /**
   * Where the home lives inside the sandbox (also its HOME). A folder below
   * the image user's home, not that home itself: an import swaps the whole
   * folder by rename, which needs a parent the user can write.
   */
  workspacePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*\/[A-Za-z0-9._-]+$/, "an absolute path below a folder, without a trailing slash")
    .default("/home/computer/workspace"),
  /** Most desktops active at once when the spec does not say (0 = no cap). */
  screenLimit: z.number().int().nonnegative().default(0),
  /**
   * What `stop` does: "stop" keeps the sandbox's disk (the default),
   * "archive" moves it to object storage (cheaper to keep, slower to start).
   */
  stopMode: z.enum(["stop", "archive"]).default("stop"),
  /** How long provision and a start (from stopped or archived) may take before TIMEOUT. */
  startTimeoutMs: z.number().int().positive().default(300_000),
  /** How often a machine in use refreshes the sandbox's activity (the API's idle clock). */
  activityRefreshMs: z.number().int().positive().default(60_000),
  /** Lifetime of the signed preview URLs `portUrl` hands out. */
  previewExpiresInSeconds: z.number().int().positive().default(3600),
  /**
   * Maps a signed preview URL to the one callers get (tests point it at a
   * loopback emulator; a deployment behind its own gateway rewrites the
   * host). The URL's token and query string must be kept. May answer a
   * promise (a tunnel to a host-form URL is opened on first use).
   */
  previewUrl: z.custom<(preview: SignedPreview) => string | Promise<string>>((v) => typeof v === "function").optional(),
  /**
   * Sandbox state changes: "events" (the SDK's socket.io channel, the
   * SDK's default) or "polling" (the SDK's polling mode, useDeprecatedPolling).
   */
  stateUpdates: z.enum(["events", "polling"]).default("events"),
  /** Per-request deadline of the SDK's HTTP calls. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
});

/** Options of `daytonaProvider`; see the README for each. */
export type DaytonaProviderOptions = z.input<typeof daytonaProviderOptionsSchema>;
export type ParsedDaytonaOptions = z.output<typeof daytonaProviderOptionsSchema>;
