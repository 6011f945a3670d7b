import { type BackgroundWorkScan, type Machine, scanBackgroundWork } from "@agent-computer/core";
import type { BotHolds, ComputerRecord } from "@agent-computer/leases";
import type { ComputerActivity } from "./computer-activity.js";

/**
 * On providers that do not bill while running, a run waiting for a takeover
 * keeps its computer up this long after asking, so the person finds the
 * login, 2FA or CAPTCHA page still open; then the idle rules apply again.
 */
export const TAKEOVER_HOLD_MS = 30 * 60_000;

/** What every worker sees of a running computer, for `suspensionReason`. */
export interface SuspensionFacts {
  readonly record: ComputerRecord;
  readonly activity: ComputerActivity | undefined;
  readonly holds: BotHolds;
  /** This process's last use of it (runtime clock). */
  readonly localLastUse: number;
  readonly billsWhileRunning: boolean;
  readonly idleMs: number;
  readonly maxActiveMs: number;
  readonly now: number;
}

/**
 * Why the computer should be suspended now, if it should: nobody used it
 * for `idleMs`, or (where the provider bills while running) it is up for
 * `maxActiveMs`. An executing run or a person in control keeps it up. A run
 * waiting for a takeover does not: asking restarted the idle timer, and
 * where the provider does not bill while running it holds the computer for
 * `TAKEOVER_HOLD_MS` after asking; the run keeps waiting through a
 * suspension, and the next use resumes the computer. (Background work is
 * looked at only once idle is due: ComputerLifecycle.suspend.)
 */
export function suspensionReason(facts: SuspensionFacts): "idle" | "active_limit" | undefined {
  const { record, activity, holds, now } = facts;
  const waiting = activity?.waiting ?? {};
  if (holds.controlled.length > 0 || holds.executing.some((botId) => waiting[botId] === undefined)) return undefined;
  const held = holds.executing.some((botId) => now - (waiting[botId] ?? 0) < TAKEOVER_HOLD_MS);
  if (!facts.billsWhileRunning && held) return undefined;
  const upSince = record.runs.at(-1)?.startedAt ?? now;
  const lastUse = Math.max(activity?.lastActivityAt ?? upSince, facts.localLastUse);
  if (facts.idleMs > 0 && now - lastUse >= facts.idleMs) return "idle";
  if (facts.billsWhileRunning && facts.maxActiveMs > 0 && now - upSince >= facts.maxActiveMs) return "active_limit";
  return undefined;
}

/** Whether the record's machine runs: its last stretch is open. */
export function isRunning(record: ComputerRecord): boolean {
  const last = record.runs.at(-1);
  return record.providerRef !== null && last !== undefined && last.endedAt === undefined;
}

/**
 * Background work the bot marked (core's scanBackgroundWork: a process
 * holding a marker under `<home>/.agent-computer/background`), which keeps
 * an idle computer up; undefined when the runtime is told not to look. A
 * failed scan is `unknown`, which holds nothing (docs/architecture.md §9).
 */
export function backgroundWorkOf(
  machine: Machine,
  settings: { readonly backgroundWorkHolds: boolean },
): Promise<BackgroundWorkScan | undefined> {
  if (!settings.backgroundWorkHolds) return Promise.resolve(undefined);
  return scanBackgroundWork(machine).catch(
    (error: Error): BackgroundWorkScan => ({ status: "unknown", reason: error.message }),
  );
}

/** The jobs whose markers are held (comma-separated), or undefined when none holds the computer. */
export function jobsHolding(scan: BackgroundWorkScan | undefined): string | undefined {
  if (scan?.status !== "ok" || scan.holders.length === 0) return undefined;
  return [...new Set(scan.holders.map((h) => h.job))].sort().join(",");
}
