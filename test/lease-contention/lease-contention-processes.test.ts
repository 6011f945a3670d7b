import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LeaseEngine, type StateStore } from "@agent-computer/leases";
import { POSTGRES_CLOCK_TOLERANCE_MS, PostgresStateStore } from "@agent-computer/state-store-postgres";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { checkFencingHistory, type FencingEvent } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { databaseAnswers, workerDatabaseUrl } from "../../packages/state-store-postgres/test/test-database.js";
import { compiledScript } from "../support/compiled-script.js";
import type { WorkerConfig } from "./worker-config.js";

// The randomized fencing checker with worker PROCESSES against the SQLite and
// PostgreSQL stores, with workers killed (SIGKILL) at random moments, often
// mid-transaction. A fenced run must show zero violations; the same run
// without the fence must show some, or the checker proves nothing.

const workerScript = await compiledScript(fileURLToPath(new URL("./worker.ts", import.meta.url)));
const WORKERS = 6;
const OPS = 450;
const KILLS = 3;
/**
 * How far a store's times may stand from its commit order
 * (POSTGRES_CLOCK_TOLERANCE_MS says why for PostgreSQL); SQLite reads and
 * commits in one process step. Only the token-order and expiry rules read
 * times; the overlap and fenced-out rules get no tolerance.
 */
const CLOCK_TOLERANCE_MS = { sqlite: 0, postgres: POSTGRES_CLOCK_TOLERANCE_MS } as const;

interface RunResult {
  events: FencingEvent[];
  killed: number;
}

async function runProcesses(kind: WorkerConfig["store"], location: string, fence: boolean): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), `contention-${kind}-`));
  const store: StateStore =
    kind === "sqlite"
      ? SqliteStateStore.open({ path: location })
      : new PostgresStateStore({ connectionString: location });
  if (store instanceof PostgresStateStore) await store.migrate();
  const engine = new LeaseEngine(store);
  const run = randomUUID().slice(0, 8);
  const computers = [0, 1, 2].map((i) => `procs-${run}-${i}`);
  for (const computerId of computers) {
    await engine.createComputer({ computerId, providerKind: "fake", homeKey: computerId, storageId: computerId });
  }
  const files: string[] = [];
  let seed = fence ? 11 : 23;
  const start = (holder: string): ChildProcess => {
    const eventsFile = join(dir, `${holder}.jsonl`);
    files.push(eventsFile);
    const config: WorkerConfig = {
      store: kind,
      location,
      computers,
      holder,
      ops: OPS,
      ttlMs: 120,
      pauseMs: 180,
      pauseChance: 0.06,
      fence,
      seed: seed++,
      eventsFile,
    };
    return spawn(process.execPath, [workerScript, JSON.stringify(config)], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  };
  const exits: Promise<number | null>[] = [];
  const children = Array.from({ length: WORKERS }, (_, i) => start(`${run}-w${i}`));
  const track = (child: ChildProcess) =>
    exits.push(new Promise((resolve) => child.on("exit", (code, signal) => resolve(signal ? null : code))));
  children.forEach(track);
  // Kill a few workers at random moments, each replaced by a new holder.
  let killed = 0;
  for (let k = 0; k < KILLS; k++) {
    await new Promise((resolve) => setTimeout(resolve, 1200 + Math.random() * 1200));
    const victim = children[Math.floor(Math.random() * children.length)] as ChildProcess;
    if (victim.exitCode === null && victim.kill("SIGKILL")) killed++;
    const replacement = start(`${run}-r${k}`);
    children.push(replacement);
    track(replacement);
  }
  const codes = await Promise.all(exits);
  expect(codes.filter((c) => c !== null && c !== 0)).toEqual([]);
  if ("close" in store) await (store as { close(): unknown }).close();
  // A worker killed while it started has written no file.
  const events = files
    .filter((file) => existsSync(file))
    .flatMap((file) => {
      const lines = readFileSync(file, "utf8").split("\n");
      // A worker killed mid-write may leave a partial last line.
      return lines.flatMap((line) => {
        try {
          return line ? [JSON.parse(line) as FencingEvent] : [];
        } catch {
          return [];
        }
      });
    });
  return { events, killed };
}

function expectBusyRun(result: RunResult): void {
  expect(result.killed).toBeGreaterThan(0);
  expect(result.events.length).toBeGreaterThan(1000);
  expect(result.events.filter((e) => e.type === "act" && e.accepted).length).toBeGreaterThan(100);
}

const stores: [WorkerConfig["store"], () => Promise<string | undefined>][] = [
  ["sqlite", async () => join(mkdtempSync(join(tmpdir(), "contention-db-")), "state.db")],
  ["postgres", async () => ((await databaseAnswers()) ? await workerDatabaseUrl() : undefined)],
];

describe.each(stores)("lease contention across worker processes: %s", (kind, locate) => {
  it("a fenced run has zero violations, also with workers killed mid-transaction", async (context) => {
    const location = await locate();
    if (!location) return context.skip("no PostgreSQL answers at the test URL; run .ci/postgres-setup.sh");
    const result = await runProcesses(kind, location, true);
    expectBusyRun(result);
    expect(checkFencingHistory(result.events, { clockToleranceMs: CLOCK_TOLERANCE_MS[kind] })).toEqual([]);
  }, 180_000);

  it("the same run without the fence makes the checker report violations", async (context) => {
    const location = await locate();
    if (!location) return context.skip("no PostgreSQL answers at the test URL; run .ci/postgres-setup.sh");
    const result = await runProcesses(kind, location, false);
    expectBusyRun(result);
    expect(checkFencingHistory(result.events, { clockToleranceMs: CLOCK_TOLERANCE_MS[kind] }).length).toBeGreaterThan(
      0,
    );
  }, 180_000);
});
