import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import type { Readable } from "node:stream";
import type { ExecResult } from "@agent-computer/core";
import { AgentComputerError, DEFAULT_MAX_OUTPUT_BYTES, type OutputListener } from "@agent-computer/core";

export interface LocalCommand {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: Uint8Array | Readable;
  timeoutMs?: number;
  maxOutputBytes?: number;
  onOutput?: OutputListener;
  /** Aborting kills the process group and rejects with the signal's reason. */
  signal: AbortSignal;
  /** Told about the process group, so a machine can kill it on stop. */
  track?: (pgid: number, running: boolean) => void;
}

/**
 * Runs a command on this host in its own process group, so a timeout or an
 * abort kills everything it started, not just the first process.
 */
export function runLocalCommand(command: LocalCommand): Promise<ExecResult> {
  const started = performance.now();
  const cap = command.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  return new Promise((resolve, reject) => {
    const child = spawn(command.argv[0] as string, command.argv.slice(1), {
      cwd: command.cwd,
      env: command.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const pgid = child.pid;
    const killGroup = () => {
      if (pgid === undefined) return;
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    let truncated = false;
    let timedOut = false;
    const collect = (name: "stdout" | "stderr") => {
      const chunks: Buffer[] = [];
      let kept = 0;
      child[name].on("data", (chunk: Buffer) => {
        command.onOutput?.(name, chunk);
        if (kept >= cap) {
          truncated = true;
          return;
        }
        const take = Math.min(chunk.length, cap - kept);
        if (take < chunk.length) truncated = true;
        chunks.push(take === chunk.length ? chunk : chunk.subarray(0, take));
        kept += take;
      });
      return () => new Uint8Array(Buffer.concat(chunks));
    };
    const stdout = collect("stdout");
    const stderr = collect("stderr");
    if (pgid !== undefined) command.track?.(pgid, true);

    const timer =
      command.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killGroup();
          }, command.timeoutMs);
    const onAbort = () => killGroup();
    command.signal.addEventListener("abort", onAbort, { once: true });
    if (command.signal.aborted) killGroup();

    let settled = false;
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      command.signal.removeEventListener("abort", onAbort);
      if (pgid !== undefined) command.track?.(pgid, false);
      if (command.signal.aborted) {
        reject(command.signal.reason ?? new AgentComputerError("ABORTED", "The command was aborted."));
        return;
      }
      resolve({
        exitCode: timedOut ? null : exitCode,
        stdout: stdout(),
        stderr: stderr(),
        timedOut,
        truncated,
        durationMs: performance.now() - started,
      });
    };
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      command.signal.removeEventListener("abort", onAbort);
      if (pgid !== undefined) command.track?.(pgid, false);
      reject(
        error.code === "ENOENT"
          ? new AgentComputerError("NOT_FOUND", `The program "${command.argv[0]}" was not found in the machine.`)
          : new AgentComputerError("UNAVAILABLE", `The command could not start: ${error.message}`, { cause: error }),
      );
    });
    // "close" waits for the pipes; a background child that keeps them open
    // would hold it forever, so after "exit" give the pipes a moment, then stop reading.
    child.on("exit", (code) => {
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code);
      }, 100).unref();
    });
    child.on("close", (code) => finish(code));
    child.stdin.on("error", () => {}); // a command that ignores stdin may close it early
    const input = command.stdin;
    if (input === undefined || input instanceof Uint8Array) child.stdin.end(input ?? new Uint8Array(0));
    else input.pipe(child.stdin);
  });
}
