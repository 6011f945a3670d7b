import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { type ComputerValue, computerValueOf, derivedKey, type Lease, LeaseEngine } from "@agent-computer/leases";
import { checkFencingHistory, type FencingEvent } from "@agent-computer/testing";
import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
import { POSTGRES_CLOCK_TOLERANCE_MS } from "../src/postgres-clock.js";
import { PostgresStateStore } from "../src/postgres-state-store.js";

// The restart test runs against its own cluster (port 5433, made by
// .ci/postgres-setup.sh) so restarting it cannot disturb the other suites.
const FAULTS_URL =
  process.env.AGENT_COMPUTER_TEST_PG_FAULTS_URL ??
  "postgres://agent_computer:agent_computer@127.0.0.1:5433/agent_computer_test";
const CLUSTER = process.env.AGENT_COMPUTER_TEST_PG_FAULTS_CLUSTER ?? "15 faults";

async function faultsClusterAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: FAULTS_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch (error) {
    if (process.env.CI)
      throw new Error(`CI is set but the fault-test cluster does not answer: ${(error as Error).message}`);
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until `done()` holds, at most 30 s (the test's expectations then say what was missing). */
async function until(done: () => boolean): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (!done() && performance.now() < deadline) await sleep(50);
}
const ready = await faultsClusterAnswers();

// Without the cluster the suite shows as skipped, with why (under CI its absence already failed above).
const suite = ready
  ? "postgres state store faults"
  : "postgres state store faults (skipped: no fault-test cluster answers on 127.0.0.1:5433; run .ci/postgres-setup.sh)";
describe.skipIf(!ready)(suite, () => {
  const store = new PostgresStateStore({ connectionString: FAULTS_URL, poolConfig: { max: 8 } });
  afterAll(() => store.close());

  /**
   * Six workers commit revisions under checkpoint leases while the server
   * restarts, now and then pausing past their lease's TTL before the write,
   * so a fenced-out holder does try to act. `fence: false` acts the naive
   * way (an advisory check, then a version-only write), which the checker
   * must catch: otherwise a clean fenced run proves nothing.
   */
  async function restartRun(fence: boolean) {
    await store.migrate();
    const engine = new LeaseEngine(store);
    const computerId = `restart-${randomUUID().slice(0, 8)}`;
    await engine.createComputer({ computerId, providerKind: "fake", homeKey: computerId, storageId: computerId });
    const ttlMs = 250;
    const events: FencingEvent[] = [];
    const counts = { before: 0, confirmed: 0, unknown: 0, outages: 0 };
    let stop = false;
    let paused = 0;

    const act = async (lease: Lease, holder: string) => {
      const computer = await engine.getComputer(computerId);
      if (!fence) await engine.assertCurrent(lease);
      if (Math.random() < 0.15) {
        paused++;
        await sleep(ttlMs * 1.5);
      }
      const at = await store.now();
      try {
        const revision = fence
          ? (
              await engine.commitRevision({
                computerId,
                lease,
                expectedRevision: computer!.revision,
                next: computer!.revision + 1,
              })
            ).revision
          : await advisoryCommit(computerId);
        if (revision === undefined) return;
        counts.confirmed++;
        events.push({ type: "act", key: lease.key, holder, token: lease.token, at, accepted: true, order: revision });
      } catch (error) {
        // An outage during the commit: it may or may not have applied.
        if (AgentComputerError.is(error, "UNAVAILABLE")) counts.unknown++;
        throw error;
      }
    };

    const worker = async (holder: string) => {
      while (!stop) {
        try {
          const lease = await engine.acquireCheckpoint({ computerId, holder, ttlMs });
          // Read after the grant returned: the revision it is ordered above.
          const seenOrder = (await engine.getComputer(computerId))!.revision;
          events.push({
            type: "grant",
            key: lease.key,
            holder,
            token: lease.token,
            at: lease.grantedAt,
            expiresAt: lease.expiresAt,
            seenOrder,
          });
          await act(lease, holder);
          await engine.release(lease);
        } catch (error) {
          if (!AgentComputerError.is(error)) throw error;
          if (error.code === "UNAVAILABLE") counts.outages++;
          await sleep(20);
        }
      }
    };

    const workers = Array.from({ length: 6 }, (_, i) => worker(`worker-${i}`));
    // By progress, not by time: a loaded machine (six engineers on 2 cores)
    // gets through far fewer steps a second, and the run must still have
    // acted, paused and met the outage.
    await until(() => counts.confirmed >= 10 && paused >= 2);
    counts.before = counts.confirmed;
    execFileSync("pg_ctlcluster", [...CLUSTER.split(" "), "restart", "-m", "immediate"]);
    await until(() => counts.outages > 0 && counts.confirmed >= counts.before + 10);
    stop = true;
    await Promise.all(workers);
    const revision = (await engine.getComputer(computerId))!.revision;
    return { events, counts, revision, paused };
  }

  /** The naive write: a version-only compare-and-set of the revision; undefined when it lost the race. */
  async function advisoryCommit(computerId: string): Promise<number | undefined> {
    const key = derivedKey.computer(computerId);
    const record = (await store.read([key])).get(key);
    const value = computerValueOf(record) as ComputerValue;
    if (!record || !value.fields) throw new Error(`restart computer ${computerId} vanished`);
    const revision = value.fields.revision + 1;
    const ok = await store.commit(
      [{ key, version: record.version }],
      [{ key, version: record.version + 1, value: { ...value, fields: { ...value.fields, revision } } }],
    );
    return ok ? revision : undefined;
  }

  it("a server restart mid-run reuses no token and half-applies no commit", async () => {
    const { events, counts, revision, paused } = await restartRun(true);
    expect(counts.before).toBeGreaterThan(0);
    expect(paused).toBeGreaterThan(0);
    expect(counts.outages).toBeGreaterThan(0);
    expect(counts.confirmed).toBeGreaterThan(counts.before);
    expect(checkFencingHistory(events, { clockToleranceMs: POSTGRES_CLOCK_TOLERANCE_MS })).toEqual([]);
    expect(revision).toBeGreaterThanOrEqual(counts.confirmed);
    expect(revision).toBeLessThanOrEqual(counts.confirmed + counts.unknown);
  }, 120_000);

  it("the same run without the fence makes the checker report violations", async () => {
    // Up to three runs: one where no paused worker woke after another's grant
    // is possible, three in a row are not.
    let rules: string[] = [];
    for (let attempt = 0; attempt < 3 && rules.length === 0; attempt++) {
      const { events, counts, paused } = await restartRun(false);
      expect(counts.outages).toBeGreaterThan(0);
      expect(paused).toBeGreaterThan(0);
      rules = checkFencingHistory(events).map((v) => v.rule);
    }
    expect(rules.length).toBeGreaterThan(0);
    // Named, so a failure says which rule it was (CI run 24 saw one outside these, unnamed).
    const unfenced = ["fenced-out-accepted", "expired-accepted", "overlapping-holders"];
    expect(rules.filter((rule) => !unfenced.includes(rule))).toEqual([]);
  }, 300_000);

  it("a client whose wall clock is skewed by minutes cannot act after its lease expired by the database's clock", async () => {
    const engine = new LeaseEngine(store);
    const computerId = `skew-${randomUUID().slice(0, 8)}`;
    await engine.createComputer({ computerId, providerKind: "fake", homeKey: computerId, storageId: computerId });
    const realNow = Date.now;
    const spy = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 7 * 60_000);
    try {
      const lease = await engine.acquireCheckpoint({ computerId, holder: "skewed", ttlMs: 300 });
      await sleep(500);
      await expect(engine.commitRevision({ computerId, lease, expectedRevision: 0, next: 1 })).rejects.toMatchObject({
        code: "LEASE_LOST",
      });
      expect((await engine.getComputer(computerId))!.revision).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });
});
