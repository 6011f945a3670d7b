import { type HostVitals, hostVitals } from "./host-vitals.js";
import { type LatencyStats, median } from "./latency-stats.js";
import type { SoakLedger } from "./soak-ledger.js";

/** One interval's report, as printed and as kept in the summary. */
export interface IntervalReport {
  readonly index: number;
  readonly fromS: number;
  readonly toS: number;
  readonly steps: number;
  readonly ops: Readonly<Record<string, LatencyStats>>;
  readonly errors: Readonly<Record<string, number>>;
  /**
   * This process's RSS and used heap right after a full collection at the
   * report (scripts/soak.mjs runs tsx with --expose-gc); without gc exposed,
   * the medians of the samples taken during the interval.
   */
  readonly hostRssBytes: number;
  readonly hostHeapUsedBytes: number;
  /** The median of the fd counts sampled during the interval (every VITALS_EVERY_MS). */
  readonly hostFds: number | undefined;
  /** The computer's memory at the report; null where it cannot be read (fake). */
  readonly computerMemoryBytes: number | null;
}

/** Host vitals are sampled this often; an interval reports their medians, so one socket in flight does not sway it. */
const VITALS_EVERY_MS = 2000;

export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/**
 * Prints, every interval, each operation's latency p50/p95/max over that
 * interval, its errors by code, this host process's RSS and open fds, and
 * the computer's memory.
 */
export class IntervalReporter {
  readonly intervals: IntervalReport[] = [];
  private vitals: HostVitals[] = [];
  private lastMs = 0;
  private timers: NodeJS.Timeout[] = [];
  private reporting: Promise<void> = Promise.resolve();
  private running = false;

  constructor(
    private readonly ledger: SoakLedger,
    private readonly everyMs: number,
    /** Reads the computer's memory in bytes; undefined when the provider offers no way (fake). */
    private readonly computerMemory: (() => Promise<number | undefined>) | undefined,
  ) {}

  start(): void {
    this.running = true;
    this.vitals = [hostVitals()];
    const sample = setInterval(() => this.vitals.push(hostVitals()), VITALS_EVERY_MS);
    const report = setInterval(() => {
      this.reporting = this.reporting
        .then(() => this.report())
        .catch((error: Error) => console.log(`  (interval report failed: ${error.message})`));
    }, this.everyMs);
    sample.unref();
    report.unref();
    this.timers = [sample, report];
  }

  /** Stops the timers and reports what is left of the last interval, if anything ran in it. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const timer of this.timers) clearInterval(timer);
    await this.reporting;
    if (this.ledger.now() - this.lastMs >= 1000) await this.report();
  }

  private async report(): Promise<void> {
    const toMs = this.ledger.now();
    const fromMs = this.lastMs;
    this.lastMs = toMs;
    // A full collection first, where exposed (scripts/soak.mjs passes --expose-gc): then the
    // reading is what the process retains, not how long ago V8 last collected.
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const samples = [...this.vitals, hostVitals()];
    this.vitals = [];
    const memory = gc ? samples.slice(-1) : samples;
    const ops: Record<string, LatencyStats> = {};
    for (const op of this.ledger.ops) {
      const stats = this.ledger.statsOf(op, fromMs, toMs);
      if (stats) ops[op] = stats;
    }
    const fds = samples.flatMap((s) => (s.fds === undefined ? [] : [s.fds]));
    const interval: IntervalReport = {
      index: this.intervals.length + 1,
      fromS: Math.round(fromMs / 100) / 10,
      toS: Math.round(toMs / 100) / 10,
      steps: this.ledger.stepsBetween(fromMs, toMs),
      ops,
      errors: Object.fromEntries(this.ledger.errorsBetween(fromMs, toMs)),
      hostRssBytes: median(memory.map((s) => s.rssBytes)) as number,
      hostHeapUsedBytes: median(memory.map((s) => s.heapUsedBytes)) as number,
      hostFds: median(fds),
      computerMemoryBytes: (await this.computerMemory?.().catch(() => undefined)) ?? null,
    };
    this.intervals.push(interval);
    console.log(formatInterval(interval, this.computerMemory === undefined));
  }
}

function formatInterval(r: IntervalReport, noComputerMemory: boolean): string {
  const errors = Object.entries(r.errors);
  const lines = [
    `[${r.toS.toFixed(1).padStart(7)}s] interval ${r.index} (${r.fromS}-${r.toS} s): ${r.steps} steps; errors: ${
      errors.length === 0 ? "none" : errors.map(([code, n]) => `${code} x${n}`).join(", ")
    }`,
    ...latencyTable(r.ops),
    `    host rss ${mb(r.hostRssBytes)} (heap ${mb(r.hostHeapUsedBytes)}), ${r.hostFds ?? "?"} fds; computer memory ${
      r.computerMemoryBytes !== null ? mb(r.computerMemoryBytes) : noComputerMemory ? "n/a (fake)" : "unreadable"
    }`,
  ];
  return lines.join("\n");
}

/** Rows of op, count, p50, p95 and max, in ms. */
export function latencyTable(ops: Readonly<Record<string, LatencyStats>>, indent = "    "): string[] {
  const cell = (v: number | string, width: number) => String(v).padStart(width);
  return [
    `${indent}${"op".padEnd(18)}${cell("n", 6)}${cell("p50", 9)}${cell("p95", 9)}${cell("max", 9)}  ms`,
    ...Object.entries(ops).map(
      ([op, s]) => `${indent}${op.padEnd(18)}${cell(s.count, 6)}${cell(s.p50, 9)}${cell(s.p95, 9)}${cell(s.max, 9)}`,
    ),
  ];
}
