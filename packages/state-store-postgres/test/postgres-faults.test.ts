import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { LeaseEngine } from "@agent-computer/leases";
import { checkFencingHistory, type FencingEvent } from "@agent-computer/testing";
import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
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
const ready = await faultsClusterAnswers();

describe.runIf(ready)("postgres state store faults", () => {
  const store = new PostgresStateStore({ connectionString: FAULTS_URL, poolConfig: { max: 8 } });
  afterAll(() => store.close());

  it("a server restart mid-run reuses no token and half-applies no commit", async () => {
    await store.migrate();
    const engine = new LeaseEngine(store);
    const computerId = `restart-${randomUUID().slice(0, 8)}`;
    await engine.createComputer({ computerId, providerKind: "fake", homeKey: computerId, storageId: computerId });
    const events: FencingEvent[] = [];
    let confirmed = 0;
    let unknown = 0;
    let outages = 0;
    let stop = false;

    const worker = async (holder: string) => {
      while (!stop) {
        try {
          const lease = await engine.acquireCheckpoint({ computerId, holder, ttlMs: 2000 });
          events.push({
            type: "grant",
            key: lease.key,
            holder,
            token: lease.token,
            at: lease.grantedAt,
            expiresAt: lease.expiresAt,
          });
          const computer = await engine.getComputer(computerId);
          const at = await store.now();
          try {
            const next = await engine.commitRevision({
              computerId,
              lease,
              expectedRevision: computer!.revision,
              next: computer!.revision + 1,
            });
            confirmed++;
            events.push({
              type: "act",
              key: lease.key,
              holder,
              token: lease.token,
              at,
              accepted: true,
              order: next.revision,
            });
          } catch (error) {
            // An outage during the commit: it may or may not have applied.
            if (AgentComputerError.is(error, "UNAVAILABLE")) unknown++;
            throw error;
          }
          await engine.release(lease);
        } catch (error) {
          if (!AgentComputerError.is(error)) throw error;
          if (error.code === "UNAVAILABLE") outages++;
          await sleep(20);
        }
      }
    };

    const workers = Array.from({ length: 6 }, (_, i) => worker(`worker-${i}`));
    await sleep(800);
    const before = confirmed;
    execFileSync("pg_ctlcluster", [...CLUSTER.split(" "), "restart", "-m", "immediate"]);
    await sleep(1500);
    stop = true;
    await Promise.all(workers);

    expect(before).toBeGreaterThan(0);
    expect(outages).toBeGreaterThan(0);
    expect(confirmed).toBeGreaterThan(before);
    expect(checkFencingHistory(events)).toEqual([]);
    const revision = (await engine.getComputer(computerId))!.revision;
    expect(revision).toBeGreaterThanOrEqual(confirmed);
    expect(revision).toBeLessThanOrEqual(confirmed + unknown);
  }, 60_000);

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

describe.skipIf(ready)("postgres state store faults (skipped)", () => {
  it.skip("needs the fault-test cluster on 127.0.0.1:5433 (CI fails instead of skipping)", () => {});
});
