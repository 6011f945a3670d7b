import type { Readable } from "node:stream";
import { z } from "zod";

/** Streams a chunk of output as it arrives (bytes, not text). */
export type OutputListener = (stream: "stdout" | "stderr", chunk: Uint8Array) => void;

/** A command to run in the machine: either an argv or one shell string. */
export const execRequestSchema = z
  .object({
    /** Program and arguments, passed without a shell. */
    argv: z.array(z.string()).min(1).optional(),
    /** A command line for `/bin/sh -c`. */
    shell: z.string().min(1).optional(),
    /** Working directory relative to the home (default: the home). */
    cwd: z.string().optional(),
    /** Extra environment variables. */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"), z.string()).optional(),
    /**
     * Bytes written to the command's stdin, then closed; or a Readable,
     * streamed as it yields (with its backpressure) and closed at its end,
     * so a caller relaying an upload holds none of it whole.
     */
    stdin: z
      .custom<Uint8Array | Readable>((v) => v instanceof Uint8Array || isReadable(v), {
        message: "expected a Uint8Array or a Readable",
      })
      .optional(),
    /**
     * Kill the process tree after this long and set `timedOut`. A machine
     * that then answers neither the command's end nor the kill within 10 s
     * (KILL_TREE_LIMIT_MS) ends the call with UNAVAILABLE, not retryable,
     * `details.killConfirmed` false: its processes may still run.
     */
    timeoutMs: z.number().int().positive().optional(),
    /** Cap on each of stdout and stderr kept in the result (default 1 MiB). */
    maxOutputBytes: z.number().int().positive().optional(),
    /** Receives output as it arrives, even past the cap. */
    onOutput: z.custom<OutputListener>((v) => typeof v === "function", { message: "expected a function" }).optional(),
  })
  .refine((r) => (r.argv === undefined) !== (r.shell === undefined), {
    message: "give exactly one of argv or shell",
    path: ["argv"],
  });

export type ExecRequest = z.input<typeof execRequestSchema>;

/** Default cap on each output stream kept in an ExecResult. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

function isReadable(v: unknown): v is Readable {
  const stream = v as Readable | undefined;
  return typeof stream?.pipe === "function" && typeof stream.on === "function";
}
