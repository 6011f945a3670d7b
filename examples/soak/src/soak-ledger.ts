import { performance } from "node:perf_hooks";
import { isExpectedError } from "./expected-errors.js";
import { type LatencyStats, latencyStats } from "./latency-stats.js";
import { STEP_KINDS, type StepKind } from "./step-kind.js";

/** One error a step met. `atMs` counts from the start of the soak. */
export interface SoakError {
  readonly atMs: number;
  readonly botId: string;
  readonly step: StepKind | "setup" | "checkpoint" | "computer";
  readonly op: string;
  readonly code: string;
  readonly message: string;
  readonly expected: boolean;
}

/** How the steps of one kind went. */
export interface StepTally {
  ran: number;
  ok: number;
  /** Ended with an error on the expected list (expected-errors.ts). */
  expected: number;
  unexpected: number;
}

/** Errors kept in full, unexpected and expected; beyond these only their counts and times grow. */
const KEPT_UNEXPECTED = 200;
const KEPT_EXPECTED = 20;

/**
 * Everything the soak measures, as it happens: each operation's latencies
 * with their time, each step's outcome, each error. Cheap to write (two
 * array pushes per call), read at report time.
 */
export class SoakLedger {
  /** performance.now() when the bots started; times are counted from here. */
  startedAt = performance.now();
  readonly steps = new Map<StepKind, StepTally>(
    STEP_KINDS.map((kind) => [kind, { ran: 0, ok: 0, expected: 0, unexpected: 0 }]),
  );
  /** The first errors in full (KEPT_UNEXPECTED unexpected, KEPT_EXPECTED expected). */
  readonly errors: SoakError[] = [];
  /** Every error: by "expected CODE" or "unexpected CODE", with when each happened. */
  readonly errorCounts = new Map<string, { expected: boolean; code: string; count: number; atMs: number[] }>();
  private readonly samples = new Map<string, { at: number[]; ms: number[] }>();
  /** When each step ended, in ms since the start. */
  private readonly stepEnds: number[] = [];

  constructor(private readonly provider: string) {}

  /** Milliseconds since the bots started. */
  now(): number {
    return performance.now() - this.startedAt;
  }

  /** Runs `work` and records its latency under `op`, failed or not. */
  async timed<T>(op: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.latency(op, performance.now() - started, started - this.startedAt);
    }
  }

  latency(op: string, ms: number, atMs = this.now() - ms): void {
    let series = this.samples.get(op);
    if (!series) {
      series = { at: [], ms: [] };
      this.samples.set(op, series);
    }
    series.at.push(atMs);
    series.ms.push(ms);
  }

  /** Records an error; returns whether it was on the expected list. */
  error(input: Omit<SoakError, "atMs" | "expected">): boolean {
    const expected = isExpectedError(this.provider, input.op, input.code);
    const key = `${expected ? "expected" : "unexpected"} ${input.code}`;
    const counted = this.errorCounts.get(key) ?? { expected, code: input.code, count: 0, atMs: [] };
    const atMs = Math.round(this.now());
    counted.count++;
    counted.atMs.push(atMs);
    this.errorCounts.set(key, counted);
    const kept = this.errors.filter((e) => e.expected === expected).length;
    if (kept < (expected ? KEPT_EXPECTED : KEPT_UNEXPECTED)) this.errors.push({ ...input, atMs, expected });
    return expected;
  }

  stepDone(kind: StepKind, outcome: "ok" | "expected" | "unexpected"): void {
    const tally = this.steps.get(kind) as StepTally;
    tally.ran++;
    tally[outcome]++;
    this.stepEnds.push(this.now());
  }

  stepsBetween(fromMs: number, toMs: number): number {
    let n = 0;
    for (const at of this.stepEnds) if (at >= fromMs && at < toMs) n++;
    return n;
  }

  get ops(): string[] {
    return [...this.samples.keys()].sort();
  }

  /** Latency stats of `op` for calls that started in [fromMs, toMs). */
  statsOf(op: string, fromMs = 0, toMs = Number.POSITIVE_INFINITY): LatencyStats | undefined {
    const series = this.samples.get(op);
    if (!series) return undefined;
    const picked: number[] = [];
    for (let i = 0; i < series.at.length; i++) {
      const at = series.at[i] as number;
      if (at >= fromMs && at < toMs) picked.push(series.ms[i] as number);
    }
    return latencyStats(picked);
  }

  /** Errors that happened in [fromMs, toMs), by code, expected ones marked. */
  errorsBetween(fromMs: number, toMs: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const { expected, code, atMs } of this.errorCounts.values()) {
      const n = atMs.filter((at) => at >= fromMs && at < toMs).length;
      if (n > 0) out.set(expected ? `${code} (expected)` : code, n);
    }
    return out;
  }

  get unexpectedErrorCount(): number {
    let n = 0;
    for (const { expected, count } of this.errorCounts.values()) if (!expected) n += count;
    return n;
  }
}
