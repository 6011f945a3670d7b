import { z } from "zod";
import { RAILWAY_GRAPHQL_URL } from "./railway-client.js";

export const railwayProviderOptionsSchema = z.object({
  /**
   * The token (never logged or put in an error): an account or workspace
   * token (default RAILWAY_API_TOKEN) or a project token (RAILWAY_TOKEN,
   * with `tokenKind: "project"`), as the official SDK reads them.
   */
  token: z.string().min(1),
  /** How the token is sent: "account" as a bearer, "project" as `project-access-token`. */
  tokenKind: z.enum(["account", "project"]).default("account"),
  /** The project the computers' services are made in (default RAILWAY_PROJECT_ID). */
  projectId: z.string().min(1),
  /** The environment they deploy to (default RAILWAY_ENVIRONMENT_ID). */
  environmentId: z.string().min(1),
  /** The GraphQL endpoint (default RAILWAY_API_URL, else Railway's public one). */
  endpoint: z.string().url().default(RAILWAY_GRAPHQL_URL),
  /**
   * The exec bridge (`/ws/exec`). Default: derived from the endpoint as the
   * SDK does (`backboard.<host>` → `wss://ssh.<host>:2226/ws/exec`).
   */
  execUrl: z.string().url().optional(),
  /** The image each computer's service deploys: the computer image, in a registry Railway can pull from. */
  image: z.string().min(1).optional(),
  /** Where the computer's volume is mounted in the service. */
  volumeMountPath: z
    .string()
    .regex(/^\/[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, "an absolute path without a trailing slash")
    .default("/data"),
  /** The home, a folder on the volume (an import swaps it whole by rename, so it must not be the mount itself). */
  homeFolder: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/)
    .default("home"),
  /** The computer's user: every command runs as it (uid:gid of the computer image's user). */
  user: z
    .string()
    .regex(/^\d+:\d+$/)
    .default("1000:1000"),
  /**
   * Who runs the display (README, "The display and the bot's user"):
   * `"second-user"` (the default) runs X, the screen servers, Chromium and
   * the desktop service as a user of their own (`agent-display`, uid 1001)
   * that the bot's user can neither signal, trace nor reach over X;
   * `"shared"` runs them as the bot's user, as before. Kept in the
   * service's name, so a reconnect drives the service as it was made.
   */
  display: z.enum(["second-user", "shared"]).default("second-user"),
  /** Most desktops active at once when the spec does not say (0 = no cap). */
  screenLimit: z.number().int().nonnegative().default(0),
  /** How long a deployment may take to run before TIMEOUT. */
  startTimeoutMs: z.number().int().positive().default(600_000),
  /** One request's deadline. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
  /** How long calls that may be sent again are retried (429, 5xx, no answer). */
  retryMs: z.number().int().nonnegative().default(60_000),
  /** How often a deployment's state is asked while waiting for it. */
  pollMs: z.number().int().positive().default(2_000),
  /**
   * The URL of a public domain (default `https://<domain>`); tests map the
   * emulator's domains to loopback with it. The gateway's tokens ride in
   * the URL's query and are kept.
   */
  domainUrl: z.custom<(domain: string) => string>((v) => typeof v === "function").optional(),
});

/** Options of `railwayProvider`; see the README for each. */
export type RailwayProviderOptions = z.input<typeof railwayProviderOptionsSchema>;
export type ParsedRailwayOptions = z.output<typeof railwayProviderOptionsSchema>;

/** The exec bridge's URL for an endpoint, as the SDK derives it (src/core/config.ts, deriveTcpProxyWsEndpoint). */
export function execUrlOf(endpoint: string): string {
  const host = new URL(endpoint).hostname;
  const relay = host.startsWith("backboard.") ? `ssh.${host.slice("backboard.".length)}` : `ssh.${host}`;
  return `wss://${relay}:2226/ws/exec`;
}
