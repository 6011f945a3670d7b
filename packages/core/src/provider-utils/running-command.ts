import { randomUUID } from "node:crypto";
import type { OutputListener } from "../contract/exec-request.js";
import type { ExecResult } from "../contract/exec-result.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";

/**
 * Every command carries this variable with a fresh id. Children inherit it,
 * also ones that start their own session or process group, so a kill finds
 * the whole tree by reading /proc/<pid>/environ inside the machine (exec
 * APIs have no kill verb of their own: closing the stream leaves the
 * process running).
 */
const MARKER = "AGENT_COMPUTER_EXEC";

// Passes until one finds nothing, at least three, 50 ms apart, at most 20: a
// process forked while a pass ran, or one whose environ could not be read in
// the middle of its exec, is caught by a later pass (CI saw a background
// child outlive two back-to-back passes on a loaded host).
const KILL_TREE = `pass=0; while :; do found=0; for p in /proc/[0-9]*; do
  grep -qzx "${MARKER}=$1" "$p/environ" 2>/dev/null && kill -KILL "\${p#/proc/}" 2>/dev/null && found=1
done; pass=$((pass + 1)); [ "$found" = 0 ] && [ "$pass" -ge 3 ] && break; [ "$pass" -ge 20 ] && break; sleep 0.05; done; true`;

// Exits 0 while any process of the tree lives (one the command's user may read).
const ANY_ALIVE = `for p in /proc/[0-9]*; do
  grep -qzx "${MARKER}=$1" "$p/environ" 2>/dev/null && exit 0
done; exit 1`;

/**
 * How long a kill of the tree may take: past it the kill is given up on
 * (its exec cancelled through the signal `killTree` gets). It also bounds
 * how long a timed-out command's transport is waited for: a service that
 * never answers the command's call answers no kill either, and only the
 * caller's deadline would end the wait (provider-boxd's silent Exec).
 */
export const KILL_TREE_LIMIT_MS = 10_000;
/** After a confirmed kill, how long the transport may still take to report the command's end. */
export const END_AFTER_KILL_MS = 2_000;

/** What of a command its bookkeeping needs. */
export interface RunningCommandOptions {
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Cap on each of stdout and stderr kept (Infinity keeps all). */
  maxOutputBytes: number;
  onOutput?: OutputListener;
  /** Fires on the caller's abort or deadline; its reason is what the run throws. */
  signal: AbortSignal;
}

/**
 * The bookkeeping every provider's command runner repeats around its own
 * transport: the marker that finds the command's process tree, stdout and
 * stderr kept up to the cap, the timeout that kills the tree, the caller's
 * abort, and the `ExecResult`.
 */
export class RunningCommand {
  /** This command's marker value. */
  readonly marker = randomUUID();
  /** The command's environment as `KEY=VALUE`, the marker included. */
  readonly env: string[];
  /**
   * Resolves when the caller aborts (or the deadline passes), or when a
   * timed-out command's transport is still silent after its kill (see
   * `stopped`); never rejects. A runner that sees it cancels its transport
   * and returns `stopped()`.
   */
  readonly aborted: Promise<"aborted">;
  private readonly started = performance.now();
  private readonly outputs = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
  private readonly kept = { stdout: 0, stderr: 0 };
  private truncated = false;
  private expired = false;
  private killing: Promise<void> | undefined;
  private finished = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private graceTimer: ReturnType<typeof setTimeout> | undefined;
  /** Set once a timed-out command's transport was given up on: whether its tree's kill was confirmed. */
  private givenUp: { killConfirmed: boolean } | undefined;
  private giveUp: (killConfirmed: boolean) => void = () => {};

  /**
   * `killTree` runs the given argv in the same machine (as the command's
   * user) and waits for it; it should cancel that run when `signal` fires
   * (after KILL_TREE_LIMIT_MS), since the wait is given up on then anyway.
   */
  constructor(
    private readonly command: RunningCommandOptions,
    private readonly killTree: (argv: string[], signal: AbortSignal) => Promise<void>,
  ) {
    this.env = Object.entries({ ...command.env, [MARKER]: this.marker }).map(([k, v]) => `${k}=${v}`);
    const signal = command.signal;
    this.aborted = new Promise((resolve) => {
      if (signal.aborted) resolve("aborted");
      else signal.addEventListener("abort", () => resolve("aborted"), { once: true });
      this.giveUp = (killConfirmed) => {
        this.givenUp ??= { killConfirmed };
        resolve("aborted");
      };
    });
  }

  /** True once the timeout passed (the tree is then being killed). */
  get timedOut(): boolean {
    return this.expired;
  }

  /** Hands output to the caller's listener as it arrives, past the cap too. */
  received(stream: "stdout" | "stderr", chunk: Uint8Array): void {
    this.command.onOutput?.(stream, new Uint8Array(chunk));
  }

  /** Keeps a copy of what fits under the stream's cap; the result says `truncated` past it. */
  keep(stream: "stdout" | "stderr", chunk: Uint8Array): void {
    const room = this.command.maxOutputBytes - this.kept[stream];
    if (room <= 0) {
      this.truncated = true;
      return;
    }
    const take = Math.min(room, chunk.length);
    if (take < chunk.length) this.truncated = true;
    // A copy: transports may reuse the memory of the chunks they hand on.
    this.outputs[stream].push(Buffer.from(chunk.subarray(0, take)));
    this.kept[stream] += take;
  }

  /**
   * Starts the timeout, once the command runs: past it `timedOut` is set
   * and the tree killed. Should the transport still not report the end
   * END_AFTER_KILL_MS after the kill, or KILL_TREE_LIMIT_MS after the
   * timeout with the kill unanswered, `aborted` resolves: the runner stops
   * waiting for a service that stays silent.
   */
  startTimeout(): void {
    if (this.command.timeoutMs === undefined) return;
    this.timer = setTimeout(() => {
      this.expired = true;
      this.graceTimer = setTimeout(() => this.giveUp(false), KILL_TREE_LIMIT_MS);
      void this.kill().then(
        () => {
          clearTimeout(this.graceTimer);
          if (this.finished) return;
          this.graceTimer = setTimeout(() => this.giveUp(true), END_AFTER_KILL_MS);
        },
        () => {
          clearTimeout(this.graceTimer);
          this.giveUp(false);
        },
      );
    }, this.command.timeoutMs);
  }

  /** SIGKILLs the command's whole process tree in the machine (once, however often called). */
  kill(): Promise<void> {
    this.killing ??= this.killTreeByMarker();
    return this.killing;
  }

  /**
   * SIGKILLs the tree once more, whatever an earlier kill found: a command
   * whose stream was cut before its start was confirmed may still be
   * starting in the machine when the first kill runs, and start after it.
   */
  killAgain(): Promise<void> {
    return this.killTreeByMarker();
  }

  /** The kill, bounded by KILL_TREE_LIMIT_MS whether or not the provider heeds the signal. */
  private async killTreeByMarker(): Promise<void> {
    const limit = new AbortController();
    const expired = new Promise<never>((_, reject) => {
      limit.signal.addEventListener("abort", () => reject(limit.signal.reason), { once: true });
    });
    expired.catch(() => {});
    const timer = setTimeout(() => {
      limit.abort(
        new AgentComputerError("TIMEOUT", `The kill of the command's processes took over ${KILL_TREE_LIMIT_MS} ms.`),
      );
    }, KILL_TREE_LIMIT_MS);
    try {
      await Promise.race([this.killTree(["sh", "-c", KILL_TREE, "kill-tree", this.marker], limit.signal), expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A script that exits 0 while a process of the command's tree still lives
   * and 1 once none does: after the main process exits, only such a process
   * can hold the output open (see provider-docker's container-command.ts).
   */
  survivorsArgv(): string[] {
    return ["sh", "-c", ANY_ALIVE, "any-alive", this.marker];
  }

  /** After a timeout, waits for its kill to end, so no process outlives the result. */
  async settleTimeout(): Promise<void> {
    if (this.expired) await this.killing?.catch(() => {});
  }

  /**
   * What a runner ends with once `aborted` resolved (it has cancelled its
   * transport): the caller's abort throws `abortError()`; a timed-out
   * command whose transport stayed silent returns the timed-out result when
   * its tree's kill was confirmed (what `ExecResult.timedOut` promises), and
   * throws UNAVAILABLE, not retryable, when it was not: its processes may
   * still run, so no result may say they were killed (provider-e2b's
   * quarantine, e2b-machine.ts killUnconfirmed, acts on that).
   */
  stopped(): ExecResult {
    if (this.command.signal.aborted || !this.givenUp) throw this.abortError();
    if (this.givenUp.killConfirmed) return this.result(null);
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The command passed its timeout of ${this.command.timeoutMs} ms; the machine did not report its end, and the kill of its processes failed or took over ${KILL_TREE_LIMIT_MS} ms: they may still be running. Check the machine before running it again.`,
      { retryable: false, details: { timedOut: true, killConfirmed: false } },
    );
  }

  /** True for what `stopped()` threw after a timeout: runners pass it on as it is. */
  isStopFailure(error: unknown): boolean {
    return (
      this.givenUp !== undefined &&
      AgentComputerError.is(error, "UNAVAILABLE") &&
      error.details?.killConfirmed === false
    );
  }

  /** What an aborted run throws: the signal's reason (ABORTED or TIMEOUT), else ABORTED. */
  abortError(): unknown {
    return this.command.signal.reason ?? new AgentComputerError("ABORTED", "The command was aborted.");
  }

  /** The result with the kept output; the exit code is null after a timeout. */
  result(exitCode: number | null): ExecResult {
    return {
      exitCode: this.expired ? null : exitCode,
      stdout: new Uint8Array(Buffer.concat(this.outputs.stdout)),
      stderr: new Uint8Array(Buffer.concat(this.outputs.stderr)),
      timedOut: this.expired,
      truncated: this.truncated,
      durationMs: performance.now() - this.started,
    };
  }

  /** Stops the timeout; call when the run ends, however it ends. */
  finish(): void {
    this.finished = true;
    clearTimeout(this.timer);
    clearTimeout(this.graceTimer);
  }
}
