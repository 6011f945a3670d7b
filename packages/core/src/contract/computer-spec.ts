import { z } from "zod";
import { egressPolicySchema } from "./egress-policy.js";
import { computerIdSchema, homeKeySchema } from "./ids.js";

const labelKey = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,126}$/, "a label key of letters, digits, . _ / -");

/** What `provision` builds. */
export const computerSpecSchema = z.object({
  /** The runtime's id for this computer; providers put it under `COMPUTER_LABELS.computerId`. */
  computerId: computerIdSchema,
  /** Which home (workspace) the machine works on. */
  homeKey: homeKeySchema,
  /** The machine image, where the provider takes one; else its default. */
  image: z.string().min(1).optional(),
  /** Limits; a provider ignores what it cannot enforce and says so in its README. */
  resources: z
    .object({
      cpus: z.number().positive().finite().optional(),
      memoryMb: z.number().int().positive().optional(),
    })
    .optional(),
  /** Most desktops active at once; 0 means no limit. */
  screenLimit: z.number().int().nonnegative().default(0),
  /** Labels the provider attaches so `list` can find the machine. */
  labels: z.record(labelKey, z.string().max(256)).default({}),
  /**
   * Where the machine's network traffic may go; absent, the provider's
   * default. Only a provider with `capabilities.egress` takes one (the
   * others refuse the spec, `UNSUPPORTED`).
   */
  egress: egressPolicySchema.optional(),
});

export type ComputerSpec = z.input<typeof computerSpecSchema>;
export type ResolvedComputerSpec = z.output<typeof computerSpecSchema>;
