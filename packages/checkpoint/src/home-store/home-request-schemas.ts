import { homeKeySchema, type Machine } from "@agent-computer/core";
import { z } from "zod";

/**
 * The zod schemas every `AgentHomeStore` validates its requests with, so the
 * local and the object store refuse the same inputs with the same paths.
 */
// The home key rule is core's; stores re-export it from here.
export { homeKeySchema };

const machineSchema = z.custom<Machine>(
  (v) =>
    typeof (v as Machine)?.files?.exportWorkspace === "function" &&
    typeof (v as Machine)?.files?.importWorkspace === "function",
  { message: "expected a Machine with files.exportWorkspace and files.importWorkspace" },
);

/** Where a home comes from or goes to: a machine, a folder, or the mounted home itself. */
export const homePlaceSchema = z.union([
  z.object({ machine: machineSchema }).strict(),
  z.object({ dir: z.string().min(1) }).strict(),
  z.object({ mounted: z.literal(true) }).strict(),
]);

export const homeCheckpointRequestSchema = z.object({
  homeKey: homeKeySchema,
  source: homePlaceSchema,
  commit: z
    .custom<(next: number) => Promise<void>>((v) => typeof v === "function", { message: "expected a function" })
    .optional(),
  committedRevision: z.number().int().nonnegative().optional(),
  ctx: z.unknown().optional(),
});

export const homeRestoreRequestSchema = z.object({
  homeKey: homeKeySchema,
  target: homePlaceSchema,
  committedRevision: z.number().int().nonnegative().optional(),
  ctx: z.unknown().optional(),
});
