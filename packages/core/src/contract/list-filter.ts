import { z } from "zod";

/** Finds machines that carry all of these labels. */
export const listFilterSchema = z.object({
  labels: z.record(z.string(), z.string()),
});

export type ListFilter = z.infer<typeof listFilterSchema>;
