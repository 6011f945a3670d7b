import { spawn } from "node:child_process";

/** What a short helper program (xdotool, python3, convert) gave back. */
export interface ProgramResult {
  /** The exit status; null when a signal ended it or it never started. */
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  /** Why it did not run to its end: it could not start, it timed out, or the call was aborted. */
  readonly error?: Error;
}

export interface ProgramOptions {
  readonly env?: Record<string, string | undefined>;
  readonly input?: string | Buffer;
  readonly timeoutMs: number;
  /** The call's own cancellation: the program is killed and the result says so. */
  readonly signal?: AbortSignal;
  /** Output beyond this is dropped (the program still runs to its end). */
  readonly maxOutputBytes?: number;
}

/**
 * Runs a helper program without blocking the event loop: the resident
 * service (docs/architecture.md §4) serves screens and other calls from the
 * same process while an action runs, and an aborted call kills what it
 * started instead of waiting for it.
 */
export function runProgram(program: string, args: readonly string[], options: ProgramOptions): Promise<ProgramResult> {
  const limit = options.maxOutputBytes ?? 64 * 1024 * 1024;
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = "";
    let error: Error | undefined;
    const child = spawn(program, args, {
      env: options.env ? { ...process.env, ...options.env } : process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const stop = (why: Error) => {
      error ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => stop(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    const onAbort = () => stop(new Error("aborted"));
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => {
      if (outBytes + chunk.length <= limit) out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      if (err.length < 64 * 1024) err += chunk;
    });
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
    child.on("error", (e) => {
      error ??= e;
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      resolve({ status, signal, stdout: Buffer.concat(out), stderr: err, ...(error ? { error } : {}) });
    });
  });
}
