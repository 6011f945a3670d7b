import type { Readable } from "node:stream";
import type { z } from "zod";
import { DEFAULT_MAX_OUTPUT_BYTES, execRequestSchema, type OutputListener } from "../contract/exec-request.js";
import { normalizeHomePath } from "../contract/home-path.js";
import { parseInput } from "../validation/parse-input.js";

/**
 * A command as a provider's runner takes it: an argv, an absolute working
 * directory inside the machine and a definite output cap. What `exec`
 * hands on after checking the caller's request, and what helper commands
 * (home files, exports) are built as directly.
 */
export interface MachineCommand {
  argv: string[];
  /** Absolute, inside the machine. */
  workingDir: string;
  env?: Record<string, string>;
  stdin?: Uint8Array | Readable;
  timeoutMs?: number;
  /** Cap on each of stdout and stderr kept (Infinity keeps all). */
  maxOutputBytes: number;
  onOutput?: OutputListener;
}

/** An `ExecRequest` after its schema: defaults applied, exactly one of argv and shell. */
export type CheckedExecRequest = z.output<typeof execRequestSchema>;

/** Checks a caller's `ExecRequest` (INVALID_ARGUMENT naming the bad field). */
export function parseExecRequest(req: unknown): CheckedExecRequest {
  return parseInput(execRequestSchema, req, "ExecRequest");
}

/**
 * The command a checked request runs in a machine whose home is
 * `workspacePath`: a shell string becomes `/bin/sh -c`, `cwd` is checked
 * against the home and made absolute, the output cap defaults to
 * `DEFAULT_MAX_OUTPUT_BYTES`.
 */
export function machineCommandOf(request: CheckedExecRequest, workspacePath: string): MachineCommand {
  return {
    argv: request.argv ?? ["/bin/sh", "-c", request.shell as string],
    workingDir: pathInHome(workspacePath, request.cwd ?? ""),
    env: request.env,
    stdin: request.stdin,
    timeoutMs: request.timeoutMs,
    maxOutputBytes: request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    onOutput: request.onOutput,
  };
}

/** The absolute path inside the machine of a home-relative path, after the lexical check. */
export function pathInHome(workspacePath: string, path: string): string {
  const rel = normalizeHomePath(path);
  return rel === "" ? workspacePath : `${workspacePath}/${rel}`;
}
