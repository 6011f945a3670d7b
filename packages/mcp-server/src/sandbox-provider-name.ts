/** The values `SANDBOX_PROVIDER` takes (docs/architecture.md §1, the provider packages); `box` is Boat's old name. */
export const SANDBOX_PROVIDER_NAMES = [
  "docker",
  "kubernetes",
  "e2b",
  "novita",
  "daytona",
  "boat",
  "box",
  "boxd",
  "createos",
  "railway",
  "host",
  "fake",
] as const;

/** Where the bot's computer runs, as `SANDBOX_PROVIDER` names it. */
export type SandboxProviderName = (typeof SANDBOX_PROVIDER_NAMES)[number];
