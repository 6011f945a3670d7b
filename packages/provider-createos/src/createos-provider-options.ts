import { z } from "zod";

/** The service's API (issue 50; the SDK's README). The SDK itself has no default: its `baseUrl` is required. */
export const CREATEOS_API_URL = "https://api.sb.createos.sh";

export const createosProviderOptionsSchema = z
  .object({
    /** The account's API key, sent as `X-Api-Key` (never logged or put in an error). Default: CREATEOS_SANDBOX_API_KEY. */
    apiKey: z.string().min(1),
    /** The API's base URL. Default: CREATEOS_SANDBOX_BASE_URL, else `https://api.sb.createos.sh`. */
    baseUrl: z.string().url().default(CREATEOS_API_URL),
    /**
     * The rootfs or template (id or name) a computer boots from: one holding
     * the computer image's tools. Default: CREATEOS_ROOTFS. Unset, `template`
     * says how to build it.
     */
    rootfs: z.string().min(1).optional(),
    /**
     * The template to boot from when `rootfs` is unset: found by name, or
     * built once from `dockerfile` (on `base`) when missing, and waited for
     * until ready (named-template.ts). The name defaults to one made from the
     * Dockerfile's hash, so a changed Dockerfile builds a new template.
     */
    template: z
      .object({
        name: z.string().min(1).optional(),
        dockerfile: z.string().min(1),
        base: z.string().min(1).optional(),
      })
      .optional(),
    /** Longest a template build may take before provision gives up (TIMEOUT). */
    templateTimeoutMs: z.number().int().positive().default(1_800_000),
    /** The sizing preset (types.ts CreateSandboxRequest.shape; docs' `s-4vcpu-4gb`). */
    shape: z.string().min(1).default("s-4vcpu-4gb"),
    /**
     * The first word of every sandbox name this provider makes: the service
     * has no labels, so a name carries ownership and labels (createos-names.ts).
     */
    namePrefix: z
      .string()
      .regex(/^[a-z][a-z0-9]{0,7}$/, "1-8 lowercase letters and digits, a letter first")
      .default("ac"),
    /** Where the home lives inside the VM (every command's HOME is its parent): below the computer user's home. */
    workspacePath: z
      .string()
      .regex(/^\/home\/computer(\/[A-Za-z0-9._-]+)+$/, "a folder below /home/computer, without a trailing slash")
      .default("/home/computer/workspace"),
    /** Most desktops active at once when the spec does not say (0 = no cap). */
    screenLimit: z.number().int().nonnegative().default(0),
    /** How long a create, pause or resume may take before TIMEOUT. */
    startTimeoutMs: z.number().int().positive().default(300_000),
    /** One HTTP request's deadline (the SDK's `timeoutMs`). */
    requestTimeoutMs: z.number().int().positive().default(120_000),
    /** How long control-plane calls that may be sent again are retried (429, 5xx, no answer) before UNAVAILABLE. */
    retryMs: z.number().int().nonnegative().default(60_000),
  })
  .refine((options) => options.rootfs !== undefined || options.template !== undefined, {
    message: "give `rootfs` (a template with the computer's tools) or `template` (how to build one)",
    path: ["rootfs"],
  });

/** Options of `createosProvider`; see the README for each. */
export type CreateosProviderOptions = z.input<typeof createosProviderOptionsSchema>;
export type ParsedCreateosOptions = z.output<typeof createosProviderOptionsSchema>;
