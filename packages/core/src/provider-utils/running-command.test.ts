import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { END_AFTER_KILL_MS, KILL_TREE_LIMIT_MS, RunningCommand } from "./running-command.js";

/** A command whose transport never reports anything: only RunningCommand can end its wait. */
function silentCommand(
  killTree: (argv: string[], signal: AbortSignal) => Promise<void>,
  signal = new AbortController().signal,
) {
  const running = new RunningCommand({ timeoutMs: 1_000, maxOutputBytes: 1024, signal }, killTree);
  let settled = false;
  void running.aborted.then(() => {
    settled = true;
  });
  running.startTimeout();
  return { running, settled: () => settled };
}

describe("RunningCommand after a timeout the service never answers", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives up on an unanswered kill within its limit and throws UNAVAILABLE, kill unconfirmed", async () => {
    let killSignal: AbortSignal | undefined;
    const { running, settled } = silentCommand((_argv, signal) => {
      killSignal = signal;
      return new Promise(() => {});
    });
    await vi.advanceTimersByTimeAsync(1_000 + KILL_TREE_LIMIT_MS - 1);
    expect(running.timedOut).toBe(true);
    expect(settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled()).toBe(true);
    // The kill's own exec is told to stop, not left open.
    expect(killSignal?.aborted).toBe(true);
    let thrown: unknown;
    try {
      running.stopped();
    } catch (error) {
      thrown = error;
    }
    expect(AgentComputerError.is(thrown, "UNAVAILABLE")).toBe(true);
    expect((thrown as AgentComputerError).retryable).toBe(false);
    expect((thrown as AgentComputerError).details).toEqual({ timedOut: true, killConfirmed: false });
    expect(running.isStopFailure(thrown)).toBe(true);
    await expect(running.kill()).rejects.toSatisfy((error) => AgentComputerError.is(error, "TIMEOUT"));
    running.finish();
  });

  it("returns the timed-out result once a confirmed kill is not followed by the transport's end", async () => {
    const { running, settled } = silentCommand(async () => {});
    running.keep("stdout", Buffer.from("hi\n"));
    await vi.advanceTimersByTimeAsync(1_000 + END_AFTER_KILL_MS - 1);
    expect(settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled()).toBe(true);
    const result = running.stopped();
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(Buffer.from(result.stdout).toString()).toBe("hi\n");
    running.finish();
  });

  it("gives up at once when the kill fails", async () => {
    const { running, settled } = silentCommand(async () => {
      throw new Error("exec refused");
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(settled()).toBe(true);
    expect(() => running.stopped()).toThrow(/may still be running/);
    running.finish();
  });

  it("leaves a command whose run ended before the kill answered alone", async () => {
    let answerKill = () => {};
    const { running, settled } = silentCommand(() => new Promise<void>((resolve) => (answerKill = resolve)));
    await vi.advanceTimersByTimeAsync(1_000);
    running.finish();
    answerKill();
    await vi.advanceTimersByTimeAsync(KILL_TREE_LIMIT_MS + END_AFTER_KILL_MS);
    expect(settled()).toBe(false);
  });

  it("throws the caller's abort reason, not a timeout outcome", async () => {
    const caller = new AbortController();
    const { running, settled } = silentCommand(() => new Promise(() => {}), caller.signal);
    const reason = new AgentComputerError("ABORTED", "stop");
    caller.abort(reason);
    await vi.advanceTimersByTimeAsync(0);
    expect(settled()).toBe(true);
    expect(() => running.stopped()).toThrow(reason);
    running.finish();
  });
});
