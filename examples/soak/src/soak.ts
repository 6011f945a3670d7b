import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef, SandboxProvider } from "@agent-computer/core";
import { type ComputerRuntime, createComputerRuntime, MemoryStateStore } from "@agent-computer/runtime";
import { BotDriver } from "./bot-driver.js";
import { CheckpointBarrier } from "./checkpoint-barrier.js";
import { EXPECTED_ERRORS } from "./expected-errors.js";
import { ExpectedHome } from "./expected-home.js";
import { computerMemoryBytes } from "./host-vitals.js";
import { IntervalReporter } from "./interval-reporter.js";
import type { LatencyStats } from "./latency-stats.js";
import { type PageSite, serveFromHost, serveInComputer } from "./page-site.js";
import { Person } from "./person.js";
import { type RestoreResult, restoreIntoNewComputer } from "./restore-check.js";
import { compareLatency, latencyWindows, soakChecks, strengthCheck } from "./soak-checks.js";
import { SoakLedger } from "./soak-ledger.js";
import type { SoakOptions } from "./soak-options.js";
import { soakProvider } from "./soak-provider.js";
import type { SoakSummary } from "./soak-summary.js";
import { TeamCheckpoints } from "./team-checkpoints.js";

const BOTS = ["alpha", "beta"] as const;

/**
 * Two scripted bots on one Team computer for `options.minutes`, each in a
 * long-lived run, with a checkpoint every `checkpointEveryMin` (all runs
 * end, the last one saves, new runs start), interval reports, and at the
 * end a restore of the last checkpoint into a new computer. Resolves with
 * the summary; `summary.ok` says whether every enforced check passed.
 * `interrupted` ends the soak early, after the bots' current steps.
 */
export async function runSoak(options: SoakOptions, interrupted?: AbortSignal): Promise<SoakSummary> {
  const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-soak-"));
  const provider = await soakProvider(options.provider, dataDir);
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const ledger = new SoakLedger(options.provider);
  const lifecycle: Record<string, number> = {};
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore(),
    homeStore,
    idleMs: 0,
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    onEvent: (event) => {
      lifecycle[event.type] = (lifecycle[event.type] ?? 0) + 1;
      // A soak on a healthy machine never loses it, and never suspends it (idleMs 0).
      if (event.type === "replaced" || event.type === "suspending")
        ledger.error({
          botId: "-",
          step: "computer",
          op: "lifecycle",
          code: event.type === "replaced" ? "COMPUTER_REPLACED" : "COMPUTER_SUSPENDED",
          message: JSON.stringify(event.detail),
        });
    },
  });
  const workspaceId = `soak-${Date.now().toString(36)}`;
  const computerId = runtime.computerIdFor({ workspaceId, botId: BOTS[0] });
  const expected = new ExpectedHome();
  const person = await Person.start(runtime, computerId, ledger);
  const host = {
    runtime,
    workspaceId,
    ledger,
    person,
    expected,
    seed: options.seed,
    pauseMs: options.pauseMs,
    stepTimeoutMs: options.stepTimeoutSec * 1000,
  };
  const drivers = BOTS.map((botId, index) => new BotDriver(botId, index, host));

  console.log(
    `Soak: ${options.provider}, ${options.minutes} min, seed ${options.seed}, lease TTL ${runtime.leaseTtlMs} ms, checkpoint every ${options.checkpointEveryMin} min, report every ${options.reportEverySec} s, bots ${BOTS.join(" and ")} on ${computerId}`,
  );
  const checkpoints = new TeamCheckpoints({ runtime, homeStore, computerId, drivers, ledger, expected });
  let site: PageSite | undefined;
  let restore: RestoreResult | undefined;
  let setupMs = 0;
  let durationMs = 0;

  const reporter = new IntervalReporter(
    ledger,
    options.reportEverySec * 1000,
    options.provider === "docker" ? computerMemoryReader(provider, runtime, computerId) : undefined,
  );
  try {
    for (const driver of drivers) driver.startRun();
    const setupStarted = performance.now();
    const machine = await (drivers[0] as BotDriver).current.machine();
    site = options.provider === "docker" ? await serveInComputer(machine) : await serveFromHost();
    setupMs = Math.round(performance.now() - setupStarted);
    console.log(`  computer up and the soak page served in ${setupMs} ms; the bots start`);

    ledger.startedAt = performance.now();
    const deadline = ledger.startedAt + options.minutes * 60_000;
    const stop = () => performance.now() >= deadline || interrupted?.aborted === true;
    reporter.start();
    const barrier = new CheckpointBarrier(drivers.length, () => checkpoints.take("scheduled"));
    const everyMs = options.checkpointEveryMin * 60_000;
    // One due in the last tenth of an interval is left to the final checkpoint:
    // its new runs would end almost at once.
    const scheduler = setInterval(() => {
      if (!stop() && deadline - performance.now() > everyMs / 10) barrier.request();
    }, everyMs);
    scheduler.unref();
    const pageSite = site;
    try {
      await Promise.all(drivers.map((driver) => driver.work(stop, barrier, pageSite)));
    } finally {
      clearInterval(scheduler);
      await barrier.idle();
    }
    durationMs = Math.round(ledger.now());
    await checkpoints.take("final");
    await reporter.stop();

    const record = await runtime.leases.getComputer(computerId);
    if (record && checkpoints.lastFiles) {
      console.log(`  restoring revision ${record.revision} into a new computer on a new home key ...`);
      restore = await restoreIntoNewComputer({ provider, homeStore, record, expected: checkpoints.lastFiles });
      ledger.latency("restore", restore.ms);
    }
  } finally {
    await reporter.stop().catch(() => {});
    for (const driver of drivers) await driver.endRun().catch(() => {});
    await person.close().catch(() => {});
    await site?.close().catch(() => {});
    await runtime.deleteComputer(computerId).catch((error: Error) => {
      console.log(`  could not delete ${computerId}: ${error.message}`);
    });
    await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  }

  const ttl = runtime.leaseTtlMs;
  const runs = drivers.flatMap((driver) =>
    driver.runs.map((span) => {
      const ms = Math.round((span.endedAt ?? performance.now()) - span.startedAt);
      return { botId: span.botId, runId: span.runId, ms, ttls: Math.round((ms / ttl) * 10) / 10 };
    }),
  );
  const ops: Record<string, LatencyStats> = {};
  for (const op of ledger.ops) {
    const stats = ledger.statsOf(op);
    if (stats) ops[op] = stats;
  }
  const checks = soakChecks({
    ledger,
    durationMs,
    intervals: reporter.intervals,
    restore,
    checkpointsCommitted: checkpoints.allCommitted,
    latencyEnforced: options.latencyCheck,
    memoryEnforced: options.memoryCheck,
    strength: strengthCheck({
      runTtls: runs.map((run) => run.ttls),
      committedCheckpoints: checkpoints.committed,
      minRunTtls: options.minRunTtls,
      minCheckpoints: options.minCheckpoints,
    }),
  });
  const byCode = Object.fromEntries([...ledger.errorCounts.entries()].map(([key, value]) => [key, value.count]));
  return {
    provider: options.provider,
    seed: options.seed,
    minutes: options.minutes,
    leaseTtlMs: ttl,
    checkpointEveryMin: options.checkpointEveryMin,
    reportEverySec: options.reportEverySec,
    pauseMs: options.pauseMs,
    computerId,
    interrupted: interrupted?.aborted === true,
    setupMs,
    durationMs,
    steps: Object.fromEntries(ledger.steps) as SoakSummary["steps"],
    totalSteps: [...ledger.steps.values()].reduce((sum, tally) => sum + tally.ran, 0),
    ops,
    latency: { windows: latencyWindows(durationMs).label, comparisons: compareLatency(ledger, durationMs) },
    errors: {
      unexpected: ledger.unexpectedErrorCount,
      byCode,
      firstUnexpected: ledger.errors.filter((e) => !e.expected).slice(0, 50),
      expectedList: EXPECTED_ERRORS.filter((e) => e.provider === options.provider),
    },
    runs,
    shortestRunTtls: Math.min(...runs.map((r) => r.ttls)),
    longestRunTtls: Math.max(...runs.map((r) => r.ttls)),
    checkpoints: checkpoints.taken,
    restore: restore ?? null,
    lifecycle,
    intervals: reporter.intervals,
    checks,
    ok: checks.every((check) => check.ok || !check.enforced),
  };
}

/** Reads the computer's memory through a handle of its own (no lease: reading changes nothing). */
function computerMemoryReader(
  provider: SandboxProvider,
  runtime: ComputerRuntime,
  computerId: string,
): () => Promise<number | undefined> {
  let handle: { ref: string; machine: Machine } | undefined;
  return async () => {
    const record = await runtime.leases.getComputer(computerId);
    if (!record?.providerRef) return undefined;
    if (handle?.ref !== record.providerRef) {
      const found = await provider.reconnect(record.providerRef as ProviderRef);
      if (found === "gone") return undefined;
      handle = { ref: record.providerRef, machine: found };
    }
    return computerMemoryBytes(handle.machine);
  };
}
