import { z } from "zod";

/** The gRPC endpoint docs.boxd.sh documents (reference/grpc-api: cleartext HTTP/2 on 9443). */
export const BOXD_API_URL = "http://boxd.sh:9443";
/** The API key exchange docs.boxd.sh documents (reference/grpc-api, "Exchange for a JWT"). */
export const BOXD_TOKEN_URL = "https://boxd.sh/api/v1/auth/token";

export const boxdProviderOptionsSchema = z.object({
  /** The organisation's API key (`bxd_…`; exchanged for JWTs, never logged or put in an error). Default: BOXD_API_KEY. */
  apiKey: z.string().min(1),
  /**
   * The organisation the machines belong to (CreateVmRequest.org). Keys
   * are bound to one organisation, so unset means the key's own. Default: BOXD_ORG.
   */
  org: z.string().min(1).optional(),
  /** The gRPC endpoint: `http://` cleartext HTTP/2, `https://` TLS. Default: BOXD_API_URL, else boxd's. */
  apiUrl: z.string().url().default(BOXD_API_URL),
  /** Where the API key is exchanged for a JWT. Default: BOXD_TOKEN_URL, else boxd's. */
  tokenUrl: z.string().url().default(BOXD_TOKEN_URL),
  /**
   * The image machines are created from (CreateVmRequest.image_ref); empty
   * asks for the service's default image. It must hold the computer's
   * tools (exec, files and the desktop), or `setup` installs them.
   */
  imageRef: z.string().default(""),
  /**
   * Where machines start from. A name: that snapshot, which holds the
   * computer's tools (CreateVmFromSnapshot). Unset with `setup` given, or
   * "auto": the snapshot named after the setup's hash, built once in the
   * background (README, "The setup snapshot"); "auto" without `setup` is
   * UNSUPPORTED. Unset without `setup`: `imageRef`, as it is.
   */
  snapshot: z.string().min(1).optional(),
  /**
   * A shell script that installs the computer's tools on a fresh machine
   * of `imageRef`, run as the boxd user (who has passwordless sudo). It
   * runs in each new machine until the setup snapshot is ready.
   */
  setup: z.string().min(1).optional(),
  /** Longest a setup may run (each machine's and the snapshot build's). */
  setupTimeoutMs: z.number().int().positive().default(1_800_000),
  /**
   * The service's idle timers in seconds (SetAutoSuspendTimeout,
   * SetAutoHibernateTimeout; 0 disables one). Both are set explicitly at
   * provision, because the docs disagree on their defaults, and both are
   * off by default: the runtime stops idle computers by its own rules, and
   * the service's timers watch inbound traffic only, so they would
   * suspend a computer that is working.
   */
  autoSuspendSeconds: z.number().int().nonnegative().default(0),
  autoHibernateSeconds: z.number().int().nonnegative().default(0),
  /** Where the home lives inside the machine (a folder below the boxd user's home; every command's HOME stays the user's). */
  workspacePath: z
    .string()
    .regex(/^\/home\/boxd(\/[A-Za-z0-9._-]+)+$/, "a folder below /home/boxd, without a trailing slash")
    .default("/home/boxd/workspace"),
  /** Most desktops active at once when the spec does not say (0 = no cap). */
  screenLimit: z.number().int().nonnegative().default(0),
  /** One control-plane call's deadline. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
  /** How long transient failures (UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL) are retried before UNAVAILABLE. */
  retryMs: z.number().int().nonnegative().default(60_000),
  /** How long provision and a resume may take before TIMEOUT. */
  startTimeoutMs: z.number().int().positive().default(300_000),
  /**
   * A machine's public URL (default `https://<name>.boxd.sh`, which reaches
   * port 8000; docs.boxd.sh, control-plane "Managing proxies"). A test
   * points it at its emulator.
   */
  publicUrl: z.custom<(name: string) => string>((v) => typeof v === "function").optional(),
});

/** Options of `boxdProvider`; see the README for each. */
export type BoxdProviderOptions = z.input<typeof boxdProviderOptionsSchema>;
export type ParsedBoxdOptions = z.output<typeof boxdProviderOptionsSchema>;
