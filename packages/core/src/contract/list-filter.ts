import { z } from "zod";

/** Finds machines that carry all of these labels. */
export const listFilterSchema = z.object({
  labels: z.record(z.string(), z.string()),
  /**
   * Only machines running now: not stopped, paused, archived or on their
   * way there. The reconciler asks this to find a running computer whose
   * start no record shows (docs/architecture.md §9); a provider must honour
   * it, and the conformance suite checks it does.
   */
  running: z.boolean().optional(),
});

export type ListFilter = z.infer<typeof listFilterSchema>;
