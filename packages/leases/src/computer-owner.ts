import { z } from "zod";

/**
 * Whom a computer's running time is attributed to (docs/architecture.md §9):
 * the app's user and space. Stored in the computer record so every worker
 * attributes a stretch the same way; run records copy it when they open.
 */
export const computerOwnerSchema = z
  .object({
    userId: z.string().min(1).max(256).optional(),
    spaceId: z.string().min(1).max(256).optional(),
  })
  .strict();

export type ComputerOwner = z.output<typeof computerOwnerSchema>;
