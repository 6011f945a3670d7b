import type { BotRun, ComputerRuntime } from "@agent-computer/runtime";

/**
 * The server's run of its bot, ended when the client made no tool call for
 * the idle time and started again by the next call. Why: a run holds its
 * bot's execution lease from its first call to its end (runtime's
 * bot-run.ts), and the runtime never suspends a computer a bot executes on
 * (suspension-rules.ts); one run for the server's whole life would keep an
 * idle client's computer up forever. Ending it also saves the home at that
 * boundary, and a completed run keeps its screen for the next one.
 *
 * `run` is what the tools hold (their session keeps one run for good): a
 * stand-in that forwards to the current run, starting one when needed.
 */
export class IdleEndingRun {
  /** Forwards every property and method to the current run. */
  readonly run: BotRun;
  /** The current run, or the last one once it ended (then the next call starts another, unless `end` was called). */
  private latest: BotRun;
  private latestEnded = false;
  private closed = false;
  private ending: Promise<void> | undefined;
  private callsInFlight = 0;
  private lastCallEndedAt: number;

  constructor(
    private readonly runtime: ComputerRuntime,
    private readonly bot: { workspaceId: string; botId: string },
    private readonly clock: () => number = Date.now,
  ) {
    this.lastCallEndedAt = clock();
    this.latest = runtime.startRun(bot);
    const current = () => this.currentRun();
    this.run = new Proxy({} as BotRun, {
      get(_target, property) {
        const run = current();
        const value = Reflect.get(run, property, run) as unknown;
        return typeof value === "function" ? value.bind(run) : value;
      },
    });
  }

  /** Runs one tool call: a run ending for idleness waits for it, and it waits for such an end to finish. */
  async around<T>(call: () => Promise<T>): Promise<T> {
    this.callsInFlight += 1;
    try {
      await this.ending;
      return await call();
    } finally {
      this.callsInFlight -= 1;
      this.lastCallEndedAt = this.clock();
    }
  }

  /** Ends the current run when no call is in flight and none ended within `idleMs`; returns whether it did. */
  async endIfIdle(idleMs: number): Promise<boolean> {
    if (this.ending || this.latestEnded || this.callsInFlight > 0) return false;
    if (this.clock() - this.lastCallEndedAt < idleMs || !this.latest.usedComputer) return false;
    this.latestEnded = true;
    this.ending = this.latest.end("completed").finally(() => {
      this.ending = undefined;
    });
    await this.ending;
    return true;
  }

  /** Ends the current run for good (the server stops); the stand-in then forwards to the ended run, which refuses. */
  async end(): Promise<void> {
    this.closed = true;
    await this.ending;
    this.latestEnded = true;
    await this.latest.end("completed");
  }

  private currentRun(): BotRun {
    if (this.latestEnded && !this.closed) {
      this.latest = this.runtime.startRun(this.bot);
      this.latestEnded = false;
    }
    return this.latest;
  }
}
