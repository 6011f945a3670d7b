import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { BotRun, ComputerRuntime } from "@agent-computer/runtime";
import { STEPS } from "./bot-steps.js";
import { BotTools } from "./bot-tools.js";
import type { CheckpointBarrier } from "./checkpoint-barrier.js";
import type { ExpectedHome } from "./expected-home.js";
import type { PageSite } from "./page-site.js";
import { asStepFailure, type Person } from "./person.js";
import { SeededRandom } from "./seeded-random.js";
import type { SoakLedger } from "./soak-ledger.js";
import { StepFailure } from "./step-failure.js";
import { STEP_KINDS, STEP_WEIGHTS, type StepKind } from "./step-kind.js";

/** One run of one bot: when it started and ended, by performance.now(). */
export interface RunSpan {
  readonly botId: string;
  readonly runId: string;
  readonly startedAt: number;
  endedAt: number | undefined;
}

/** What every bot of a soak shares. */
export interface DriverHost {
  readonly runtime: ComputerRuntime;
  readonly workspaceId: string;
  readonly ledger: SoakLedger;
  readonly person: Person;
  readonly expected: ExpectedHome;
  readonly seed: number;
  readonly pauseMs: number;
  readonly stepTimeoutMs: number;
}

const PRINTED_ERRORS = 20;
let printedErrors = 0;

/**
 * One bot of the soak: a long-lived run (replaced only at checkpoints), and
 * a loop of steps picked at random, seeded per bot. The first steps tour
 * every kind once in a shuffled order, so even a short soak runs them all.
 */
export class BotDriver {
  readonly runs: RunSpan[] = [];
  private run: BotRun | undefined;
  private tools: BotTools | undefined;
  private readonly random: SeededRandom;
  private readonly tour: StepKind[];
  private n = 0;

  constructor(
    readonly botId: string,
    index: number,
    private readonly host: DriverHost,
  ) {
    this.random = new SeededRandom(host.seed * 7919 + index);
    this.tour = this.random.shuffled(STEP_KINDS);
  }

  /** The current run (one must have been started). */
  get current(): BotRun {
    if (!this.run) throw new Error(`${this.botId} has no run`);
    return this.run;
  }

  startRun(): BotRun {
    const run = this.host.runtime.startRun({ workspaceId: this.host.workspaceId, botId: this.botId });
    this.run = run;
    this.tools = new BotTools(run, this.host.runtime.capabilities, this.host.ledger);
    this.runs.push({ botId: this.botId, runId: run.runId, startedAt: performance.now(), endedAt: undefined });
    return run;
  }

  async endRun(): Promise<void> {
    const run = this.run;
    if (!run) return;
    this.run = undefined;
    const span = this.runs.at(-1) as RunSpan;
    try {
      await run.end("completed");
    } finally {
      span.endedAt = performance.now();
    }
  }

  /** Steps until `stop()` says so, parking at checkpoints between steps. */
  async work(stop: () => boolean, barrier: CheckpointBarrier, site: PageSite): Promise<void> {
    try {
      for (;;) {
        await barrier.pass();
        if (stop()) return;
        await this.step(
          site,
          this.tour.shift() ?? this.random.weighted(Object.entries(STEP_WEIGHTS) as [StepKind, number][]),
        );
        if (this.host.pauseMs > 0) await sleep(this.host.pauseMs);
      }
    } finally {
      barrier.leave();
    }
  }

  private async step(site: PageSite, kind: StepKind): Promise<void> {
    const { ledger, stepTimeoutMs } = this.host;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new StepFailure(kind, "HARNESS_TIMEOUT", `the ${kind} step took longer than ${stepTimeoutMs} ms`));
      }, stepTimeoutMs);
    });
    try {
      const work = STEPS[kind]({
        botId: this.botId,
        n: ++this.n,
        tools: this.tools as BotTools,
        random: this.random,
        person: this.host.person,
        site,
        expected: this.host.expected,
        signal: controller.signal,
      });
      // A step that outlives its time may still fail later: that is already counted.
      work.catch(() => {});
      await Promise.race([work, timedOut]);
      ledger.stepDone(kind, "ok");
    } catch (error) {
      const failure = asStepFailure(kind, error);
      const message = failure.message.slice(0, 500);
      const expected = ledger.error({ botId: this.botId, step: kind, op: failure.op, code: failure.code, message });
      ledger.stepDone(kind, expected ? "expected" : "unexpected");
      if (!expected && printedErrors++ < PRINTED_ERRORS)
        console.log(
          `  ! ${(ledger.now() / 1000).toFixed(1)}s ${this.botId} ${kind} (${failure.op}) ${failure.code}: ${message.slice(0, 200)}`,
        );
    } finally {
      clearTimeout(timer);
    }
  }
}
