import { z } from "zod";

/** One stretch a computer ran (docs/architecture.md §9), with why it ended. */
export const computerRunSchema = z.object({
  runId: z.string().min(1).max(256),
  /** Milliseconds since the epoch. */
  startedAt: z.number().nonnegative(),
  endedAt: z.number().nonnegative().optional(),
  endReason: z.enum(["stopped", "idle", "active_limit", "replaced", "gone", "deleted", "reconciled"]).optional(),
});

export type ComputerRun = z.output<typeof computerRunSchema>;
