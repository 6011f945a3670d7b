import { z } from "zod";

/** Job names: the `<job>` of `<home>/.agent-computer/background/<job>.marker`. */
export const backgroundJobSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
  );

export const backgroundWorkOptionsSchema = z.object({
  /** Only this job's marker (default: every marker in the folder). */
  job: backgroundJobSchema.optional(),
  /**
   * How to run the in-computer scanner (python3, standard library only).
   * The computer image has it on PATH; elsewhere copy
   * `image/runtime/bin/scan-background` in and name it here.
   */
  command: z.array(z.string().min(1)).min(1).default(["scan-background"]),
  /** The most the scan may take (default 30 s; the context's deadline wins when sooner). */
  timeoutMs: z.number().int().positive().max(600_000).default(30_000),
});

/** Options of `scanBackgroundWork`. */
export type BackgroundWorkOptions = z.input<typeof backgroundWorkOptionsSchema>;
