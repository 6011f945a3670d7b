import { z } from "zod";

/** What a provider's machines can do. Callers branch on these, never on `kind`. */
export const providerCapabilitiesSchema = z.object({
  /** Machines offer `openDesktop` (a Linux desktop per bot). */
  desktop: z.boolean(),
  /** More than one bot can hold a desktop at once on one machine. */
  multiScreen: z.boolean(),
  /** Desktops expose a `pageBrowser` (docs/architecture.md §5). */
  pageBrowser: z.boolean(),
  /** Desktops offer `terminalEndpoint`. */
  terminal: z.boolean(),
  /** A running machine costs money, so idle machines should be suspended. */
  billsWhileRunning: z.boolean(),
  /**
   * `stop` suspends and `reconnect` finds the same machine with its home.
   * When false, stop deletes the machine and the saved home is the
   * persistence boundary: reconnect after stop gives "gone".
   */
  stopKeepsMachine: z.boolean(),
  /**
   * The home is a host folder mounted into the machine: checkpoints only
   * advance a revision marker, and `importWorkspace` works only while the
   * machine is stopped (CONFLICT on a running one).
   */
  mountedHome: z.boolean(),
  /**
   * The runtime keeps a run record of each stretch a machine runs
   * (docs/architecture.md §9), the running time an app reports per user.
   * False for a machine whose running time is not worth counting: the
   * app's own host (provider-host). Absent means true.
   */
  recordsRunTime: z.boolean().optional(),
  /**
   * A completed run keeps its bot's screen and browser up, idle, for the
   * bot's next run (views and logged-in sessions intact); a failed one
   * tears it down. False for a provider whose screens are released at the
   * end of every run (CreateOS, as the product documents say). Absent
   * means true.
   */
  keepsScreensBetweenRuns: z.boolean().optional(),
  /**
   * A spec's `egress` policy is enforced outside the machine's reach
   * (docs/architecture.md §9). Absent means false: such a provider refuses
   * a spec with one (`UNSUPPORTED`).
   */
  egress: z.boolean().optional(),
});

export type ProviderCapabilities = z.infer<typeof providerCapabilitiesSchema>;
