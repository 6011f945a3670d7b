import { latencyTable } from "./interval-reporter.js";
import type { SoakSummary } from "./soak-summary.js";

/** The summary block printed at the end of a soak. */
export function summaryText(s: SoakSummary): string {
  const steps = Object.entries(s.steps)
    .map(
      ([kind, t]) =>
        `${kind} ${t.ran}${t.expected ? ` (${t.expected} expected errors)` : ""}${t.unexpected ? ` (${t.unexpected} FAILED)` : ""}`,
    )
    .join(", ");
  const errors = Object.entries(s.errors.byCode);
  const comparisons = s.latency.comparisons.map((c) => {
    const verdict = c.ok === undefined ? "too few calls" : c.ok ? "ok" : "GREW";
    const of = (w: typeof c.first) => (w ? `${w.p50}/${w.p95} (n ${w.count})` : "-");
    return `    ${c.op.padEnd(18)} ${of(c.first).padStart(24)} -> ${of(c.last).padEnd(24)} ${verdict}`;
  });
  const lines = [
    "",
    `=== soak summary: ${s.provider}, ${(s.durationMs / 60_000).toFixed(2)} min of ${s.minutes}${s.interrupted ? " (INTERRUPTED)" : ""}, seed ${s.seed}, lease TTL ${s.leaseTtlMs} ms ===`,
    `steps: ${s.totalSteps} (${steps})`,
    `runs: ${s.runs.length}, shortest ${s.shortestRunTtls} TTLs, longest ${s.longestRunTtls} TTLs (${s.runs
      .map((r) => `${r.botId} ${(r.ms / 1000).toFixed(1)} s`)
      .join(", ")})`,
    `checkpoints: ${s.checkpoints.map((c) => `r${c.revision} ${c.trigger} at ${c.atS} s in ${c.ms} ms`).join(", ") || "none"}`,
    `restore: ${
      s.restore
        ? `revision ${s.restore.restoredRevision ?? "none"} on home key ${s.restore.homeKey} in ${s.restore.ms} ms, ${s.restore.matched}/${s.restore.files} files matched`
        : "not attempted"
    }`,
    `errors: ${s.errors.unexpected} unexpected${errors.length ? `; ${errors.map(([k, n]) => `${k} x${n}`).join(", ")}` : ""}`,
    ...s.errors.firstUnexpected
      .slice(0, 5)
      .map(
        (e) =>
          `    ${(e.atMs / 1000).toFixed(1)}s ${e.botId} ${e.step} (${e.op}) ${e.code}: ${e.message.slice(0, 160)}`,
      ),
    `lifecycle events: ${Object.entries(s.lifecycle)
      .map(([type, n]) => `${type} ${n}`)
      .join(", ")}`,
    "latency over the whole soak:",
    ...latencyTable(s.ops),
    `latency p50/p95 ms, ${s.latency.windows}:`,
    ...comparisons,
    "checks:",
    ...s.checks.map(
      (c) =>
        `  ${!c.judged ? "SKIP" : c.ok ? "PASS" : c.enforced ? "FAIL" : "WARN"}${c.enforced ? "" : " (reported only)"} ${c.name}: ${c.detail}`,
    ),
    `RESULT: ${s.ok ? "PASS" : "FAIL"}`,
  ];
  return lines.join("\n");
}
