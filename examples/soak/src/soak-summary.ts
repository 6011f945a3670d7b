import type { ExpectedError } from "./expected-errors.js";
import type { IntervalReport } from "./interval-reporter.js";
import type { LatencyStats } from "./latency-stats.js";
import type { RestoreResult } from "./restore-check.js";
import type { LatencyComparison, SoakCheck } from "./soak-checks.js";
import type { SoakError, StepTally } from "./soak-ledger.js";
import type { StepKind } from "./step-kind.js";

/** What a soak found: printed at the end, written by `--json`. Times in ms unless named `...S`. */
export interface SoakSummary {
  readonly provider: "fake" | "docker";
  readonly seed: number;
  readonly minutes: number;
  readonly leaseTtlMs: number;
  readonly checkpointEveryMin: number;
  readonly reportEverySec: number;
  readonly pauseMs: number;
  readonly computerId: string;
  /** Stopped early by SIGINT or SIGTERM: the checks ran on what there was. */
  readonly interrupted: boolean;
  /** Bringing the computer up and serving the soak page, before the clock starts. */
  readonly setupMs: number;
  /** From the bots' start until the last step ended. */
  readonly durationMs: number;
  readonly steps: Readonly<Record<StepKind, StepTally>>;
  readonly totalSteps: number;
  /** Each operation (tool, or harness operation: screen_view, screen_control, takeover_answer, checkpoint, restore) over the whole soak. */
  readonly ops: Readonly<Record<string, LatencyStats>>;
  readonly latency: { readonly windows: string; readonly comparisons: readonly LatencyComparison[] };
  readonly errors: {
    readonly unexpected: number;
    /** "expected CODE" / "unexpected CODE" to counts. */
    readonly byCode: Readonly<Record<string, number>>;
    readonly firstUnexpected: readonly SoakError[];
    /** The expected-error list for this provider (expected-errors.ts). */
    readonly expectedList: readonly ExpectedError[];
  };
  /** Every bot run, with its length in lease TTLs. */
  readonly runs: readonly { botId: string; runId: string; ms: number; ttls: number }[];
  readonly shortestRunTtls: number;
  readonly longestRunTtls: number;
  readonly checkpoints: readonly {
    atS: number;
    trigger: "scheduled" | "final";
    revision: number;
    ms: number;
    /** Files and bytes the checkpoint saved; null for a mounted home (only the marker moves). */
    files: number | null;
    bytes: number | null;
  }[];
  readonly restore: RestoreResult | null;
  /** Computer lifecycle events by type (provisioning, ready, checkpointing, takeover-started, ...). */
  readonly lifecycle: Readonly<Record<string, number>>;
  readonly intervals: readonly IntervalReport[];
  readonly checks: readonly SoakCheck[];
  /** Every enforced check passed. */
  readonly ok: boolean;
}
