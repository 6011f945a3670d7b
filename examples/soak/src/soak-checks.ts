import type { IntervalReport } from "./interval-reporter.js";
import { mb } from "./interval-reporter.js";
import type { LatencyStats } from "./latency-stats.js";
import type { RestoreResult } from "./restore-check.js";
import type { SoakLedger } from "./soak-ledger.js";
import { STEP_KINDS } from "./step-kind.js";

/**
 * One line of the summary. `enforced: false` is reported only
 * (`--no-...-check`); `judged: false` had too little to go on (too short a
 * soak) and passes.
 */
export interface SoakCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly enforced: boolean;
  readonly judged: boolean;
  readonly detail: string;
}

/** Latency may grow by this factor from the first window to the last... */
export const LATENCY_FACTOR = 1.2;
/** ...or by this many ms: below it, a difference is scheduler noise on a shared machine, not a trend. */
export const LATENCY_NOISE_FLOOR_MS = 2;
/** Fewer calls than this in either window: the op is listed, not judged (below 20, p95 is the maximum). */
export const LATENCY_MIN_SAMPLES = 20;
/** Host RSS and fds may grow by this fraction after warm-up. */
export const MEMORY_GROWTH = 0.1;

/** The windows latency is compared in: the first and last ten minutes, or thirds of a shorter soak. */
export function latencyWindows(durationMs: number): { first: [number, number]; last: [number, number]; label: string } {
  const tenMinutes = 10 * 60_000;
  const width = durationMs >= 3 * tenMinutes ? tenMinutes : durationMs / 3;
  return {
    first: [0, width],
    last: [durationMs - width, Number.POSITIVE_INFINITY],
    label: width === tenMinutes ? "first vs last ten minutes" : "first vs last third",
  };
}

export interface LatencyComparison {
  readonly op: string;
  readonly first: LatencyStats | undefined;
  readonly last: LatencyStats | undefined;
  /** undefined: too few samples to judge. */
  readonly ok: boolean | undefined;
}

export function compareLatency(ledger: SoakLedger, durationMs: number): LatencyComparison[] {
  const { first, last } = latencyWindows(durationMs);
  const within = (early: number, late: number) =>
    late <= early * LATENCY_FACTOR || late - early <= LATENCY_NOISE_FLOOR_MS;
  return ledger.ops.map((op) => {
    const a = ledger.statsOf(op, ...first);
    const b = ledger.statsOf(op, ...last);
    const judged = a && b && a.count >= LATENCY_MIN_SAMPLES && b.count >= LATENCY_MIN_SAMPLES;
    return { op, first: a, last: b, ok: judged ? within(a.p50, b.p50) && within(a.p95, b.p95) : undefined };
  });
}

/**
 * Host RSS and open fds after warm-up. Warm-up is the first interval; the
 * baseline is the interval after it; every later interval's median must
 * stay within +10% of it (falling is fine).
 */
export function memoryCheck(intervals: readonly IntervalReport[], enforced: boolean): SoakCheck {
  const name = "host RSS and fds flat after warm-up";
  if (intervals.length < 3)
    return {
      name,
      ok: true,
      enforced,
      judged: false,
      detail: `not judged: needs 3 intervals (warm-up, baseline, one more), had ${intervals.length}; lower --report-every-s`,
    };
  const [baseline, ...later] = intervals.slice(1) as [IntervalReport, ...IntervalReport[]];
  const worstRss = Math.max(...later.map((r) => r.hostRssBytes));
  const fds = later.flatMap((r) => (r.hostFds === undefined ? [] : [r.hostFds]));
  const worstFds = fds.length > 0 ? Math.max(...fds) : undefined;
  const rssOk = worstRss <= baseline.hostRssBytes * (1 + MEMORY_GROWTH);
  const fdsOk =
    worstFds === undefined || baseline.hostFds === undefined || worstFds <= baseline.hostFds * (1 + MEMORY_GROWTH);
  const pct = (a: number, b: number) => `${a >= b ? "+" : ""}${(((a - b) / b) * 100).toFixed(1)}%`;
  return {
    name,
    ok: rssOk && fdsOk,
    enforced,
    judged: true,
    detail: `rss ${mb(baseline.hostRssBytes)} at interval 2, at most ${mb(worstRss)} after (${pct(worstRss, baseline.hostRssBytes)}); fds ${
      baseline.hostFds ?? "?"
    }, at most ${worstFds ?? "?"} after${
      worstFds !== undefined && baseline.hostFds ? ` (${pct(worstFds, baseline.hostFds)})` : ""
    }`,
  };
}

/**
 * The soak's strength as asked on the command line (`--min-run-ttls`,
 * `--min-checkpoints`): every run outlived its lease that many times, and
 * that many checkpoints committed. CI asks for both, so a shorter soak
 * cannot pass as one that proved as much (.ci/run).
 */
export function strengthCheck(input: {
  runTtls: readonly number[];
  committedCheckpoints: number;
  minRunTtls: number;
  minCheckpoints: number;
}): SoakCheck {
  const { runTtls, committedCheckpoints, minRunTtls, minCheckpoints } = input;
  const name = `every run at least ${minRunTtls} lease TTLs, at least ${minCheckpoints} checkpoints committed`;
  const shortest = runTtls.length > 0 ? Math.min(...runTtls) : 0;
  const judged = minRunTtls > 0 || minCheckpoints > 0;
  return {
    name,
    ok: shortest >= minRunTtls && committedCheckpoints >= minCheckpoints,
    enforced: true,
    judged,
    detail: judged
      ? `${runTtls.length} runs, shortest ${shortest} TTLs; ${committedCheckpoints} checkpoints committed`
      : "not asked (--min-run-ttls, --min-checkpoints)",
  };
}

export function soakChecks(input: {
  ledger: SoakLedger;
  durationMs: number;
  intervals: readonly IntervalReport[];
  restore: RestoreResult | undefined;
  checkpointsCommitted: boolean;
  latencyEnforced: boolean;
  memoryEnforced: boolean;
  strength: SoakCheck;
}): SoakCheck[] {
  const { ledger, restore } = input;
  const unexpected = [...ledger.errorCounts.entries()].filter(([, v]) => !v.expected);
  const idle = STEP_KINDS.filter((kind) => (ledger.steps.get(kind)?.ran ?? 0) === 0);
  const latency = compareLatency(ledger, input.durationMs);
  const grew = latency.filter((c) => c.ok === false);
  const judged = latency.filter((c) => c.ok !== undefined).length;
  return [
    {
      name: "no unexpected errors",
      ok: unexpected.length === 0,
      enforced: true,
      judged: true,
      detail:
        unexpected.length === 0
          ? "none"
          : unexpected.map(([key, v]) => `${key.replace(/^unexpected /, "")} x${v.count}`).join(", "),
    },
    {
      name: "every step kind ran",
      ok: idle.length === 0,
      enforced: true,
      judged: true,
      detail: idle.length === 0 ? STEP_KINDS.join(", ") : `never ran: ${idle.join(", ")}`,
    },
    {
      name: "every checkpoint restorable",
      ok: input.checkpointsCommitted && restore?.ok === true,
      enforced: true,
      judged: true,
      detail: !restore
        ? "no checkpoint to restore"
        : `${input.checkpointsCommitted ? "each checkpoint committed a new revision" : "a checkpoint did not commit"}; revision ${
            restore.restoredRevision ?? "none"
          } of ${restore.committedRevision} restored on home key ${restore.homeKey}: ${restore.matched}/${restore.files} files matched${
            restore.mismatched.length > 0 ? ` (differ: ${restore.mismatched.join(", ")})` : ""
          }${restore.error ? `; ${restore.error}` : ""}`,
    },
    {
      name: `p50/p95 within ${LATENCY_FACTOR}x (${latencyWindows(input.durationMs).label})`,
      ok: grew.length === 0,
      enforced: input.latencyEnforced,
      judged: judged > 0,
      detail:
        grew.length === 0
          ? judged > 0
            ? `${judged} ops judged, none grew`
            : `not judged: no op had ${LATENCY_MIN_SAMPLES} calls in both windows`
          : grew
              .map((c) => `${c.op} p50 ${c.first?.p50}->${c.last?.p50}, p95 ${c.first?.p95}->${c.last?.p95} ms`)
              .join("; "),
    },
    memoryCheck(input.intervals, input.memoryEnforced),
    input.strength,
  ];
}
