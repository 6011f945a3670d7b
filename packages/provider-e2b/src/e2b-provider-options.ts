import type { ComputerQuarantine } from "@agent-computer/provider-kit";
import { z } from "zod";

/** What `portUrl` returns for (sandbox id, port), instead of `https://<port>-<id>.<domain>`. */
export type E2bPortUrl = (sandboxId: string, port: number) => string;

export const e2bProviderOptionsSchema = z.object({
  /**
   * The API key (E2B_API_KEY). Without one the provider is still made, so
   * the app starts; every computer call then fails UNAVAILABLE saying so.
   */
  apiKey: z.string().min(1).optional(),
  /** The template every computer starts from (E2B_TEMPLATE): the computer template, never the stock desktop. */
  template: z.string().min(1),
  /**
   * What a computer starts from while `template` does not exist yet: E2B's
   * stock `desktop` by default (shell and files work; the computer's own
   * desktop tools need the computer template), `null` to refuse with
   * NOT_FOUND instead. Novita has no stock computer template: always refused.
   */
  stockTemplate: z.string().min(1).nullable().optional(),
  /** The control plane, default `https://api.<domain>` (E2B_API_URL; the SDK marks it internal). */
  apiUrl: z.string().url().optional(),
  /** envd for every sandbox at one address (E2B_SANDBOX_URL; the SDK marks it internal). */
  sandboxUrl: z.string().url().optional(),
  /** The sandbox domain (E2B_DOMAIN, default e2b.app). */
  domain: z.string().min(1).optional(),
  /** Maps (sandbox, port) to a URL; tests point it at the emulator. */
  portUrl: z.custom<E2bPortUrl>((v) => typeof v === "function", "a function (sandboxId, port) => URL").optional(),
  /**
   * The sandbox timeout set on create and on EVERY connect: a connect
   * without it resets the sandbox to 5 minutes (E2B #1055). On timeout the
   * sandbox pauses with its memory, it is not killed.
   */
  timeoutMs: z
    .number()
    .int()
    .min(1000)
    .default(60 * 60 * 1000),
  /**
   * How often work in flight (a command, an open desktop, a transfer) sets
   * the sandbox's timeout again, so it is not paused under the work
   * (default: a quarter of `timeoutMs`, at least 1 s).
   */
  keepAliveMs: z.number().int().min(100).optional(),
  /** How long a stop follows a pause that outlived its request before it fails (a pause snapshots memory: seconds per GB). */
  pauseDeadlineMs: z.number().int().positive().default(600_000),
  /** How long a control-plane call may retry 5xx, 429 and network failures before UNAVAILABLE. */
  controlPlaneDeadlineMs: z.number().int().positive().default(30_000),
  /** The SDK's per-request timeout. */
  requestTimeoutMs: z.number().int().positive().default(30_000),
  /** The sandbox user commands run as (the template's user). */
  user: z.string().min(1).default("user"),
  /**
   * Who runs the display (README, "The display and the bot's user"):
   * `"second-user"` (the default) runs X, the screen servers, Chromium and
   * the desktop service as the image's `computer`, which the bot's user can
   * neither signal, trace nor reach over X, after taking from the bot's
   * user the root rights E2B's template build gives it; `"shared"` runs
   * them as the bot's user, as before, on any template.
   */
  display: z.enum(["second-user", "shared"]).default("second-user"),
  /** Where the home lives in the sandbox: a folder below the user's home (an import swaps it by rename). */
  workspacePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*\/[A-Za-z0-9._-]+$/, "an absolute path below a folder, without a trailing slash")
    .default("/home/user/agent-home"),
  /** Most desktops active at once per computer when the spec does not say (0 = no limit). */
  screenLimit: z.number().int().nonnegative().default(0),
  /** Variables set in every sandbox. */
  envs: z.record(z.string(), z.string()).default({}),
  /**
   * Where quarantined computers are kept (the Novita flavour quarantines a
   * computer whose command could not be confirmed killed); default: memory.
   */
  quarantine: z
    .custom<ComputerQuarantine>(
      (v) => typeof (v as ComputerQuarantine | undefined)?.reasonOf === "function",
      "a ComputerQuarantine",
    )
    .optional(),
  /** Where an import stages and checks the archive on this host (default: the OS temp folder). */
  stagingDir: z.string().min(1).optional(),
});

export type E2bProviderOptions = z.input<typeof e2bProviderOptionsSchema>;
export type ResolvedE2bProviderOptions = z.output<typeof e2bProviderOptionsSchema>;

/** The `<prefix>_*` variables (E2B_API_KEY, NOVITA_API_KEY, ...) the provider reads where an option is not given. */
export function e2bOptionsFromEnv(
  env: Record<string, string | undefined>,
  prefix: "E2B" | "NOVITA" = "E2B",
): Partial<E2bProviderOptions> {
  const pick = (name: string) => {
    const value = env[`${prefix}_${name}`];
    return value === undefined || value === "" ? undefined : value;
  };
  return withoutUndefined({
    apiKey: pick("API_KEY"),
    template: pick("TEMPLATE"),
    apiUrl: pick("API_URL"),
    sandboxUrl: pick("SANDBOX_URL"),
    domain: pick("DOMAIN"),
  });
}

export function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
