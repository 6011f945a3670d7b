// One worker PROCESS of the multi-process contention test. It fights other
// processes for the checkpoint leases of a few computers and appends every
// grant, renewal and action to its own events file, one JSON line each,
// synchronously, so what it did survives a kill -9.
import { appendFileSync } from "node:fs";
import { AgentComputerError } from "@agent-computer/core";
import { type Lease, LeaseEngine, type StateStore } from "@agent-computer/leases";
import { PostgresStateStore } from "@agent-computer/state-store-postgres";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import type { FencingEvent } from "@agent-computer/testing";
import type { WorkerConfig } from "./worker-config.js";

const config = JSON.parse(process.argv[2] as string) as WorkerConfig;
const store: StateStore =
  config.store === "sqlite"
    ? SqliteStateStore.open({ path: config.location, busyTimeoutMs: 2000 })
    : new PostgresStateStore({ connectionString: config.location, poolConfig: { max: 2 } });
const engine = new LeaseEngine(store);
const random = mulberry32(config.seed);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const record = (event: FencingEvent) => appendFileSync(config.eventsFile, `${JSON.stringify(event)}\n`);
const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
const lostLease = (error: unknown) => AgentComputerError.is(error, "LEASE_LOST", "FENCED_OUT", "CONFLICT");

async function pauseSometimes(): Promise<void> {
  if (random() < config.pauseChance) await sleep(config.pauseMs + random() * config.ttlMs);
}

/**
 * The resource's order once a grant returned: the revision for the fenced
 * way, the counter for the advisory one (each is what that way's actions order by).
 */
async function orderOf(lease: Lease): Promise<number> {
  const computerId = lease.computerId as string;
  if (config.fence) return (await engine.getComputer(computerId))!.revision;
  const key = `counter/${computerId}`;
  return Number((await store.read([key])).get(key)?.value.count ?? 0);
}

/** The fenced action: `commitRevision` checks token and expiry in the commit itself. */
async function actFenced(lease: Lease): Promise<boolean> {
  const computerId = lease.computerId as string;
  const computer = await engine.getComputer(computerId);
  await pauseSometimes();
  const at = await store.now();
  try {
    const next = await engine.commitRevision({
      computerId,
      lease,
      expectedRevision: computer!.revision,
      next: computer!.revision + 1,
    });
    record({
      type: "act",
      key: lease.key,
      holder: config.holder,
      token: lease.token,
      at,
      accepted: true,
      order: next.revision,
    });
    return true;
  } catch (error) {
    if (!lostLease(error)) throw error;
    record({ type: "act", key: lease.key, holder: config.holder, token: lease.token, at, accepted: false });
    return false;
  }
}

/** The unfenced action: an advisory check, then a version-only compare-and-set on a counter. */
async function actAdvisory(lease: Lease): Promise<boolean> {
  try {
    await engine.assertCurrent(lease);
  } catch (error) {
    if (!lostLease(error)) throw error;
    return false;
  }
  await pauseSometimes();
  const key = `counter/${lease.computerId}`;
  const current = (await store.read([key])).get(key);
  const count = Number(current?.value.count ?? 0) + 1;
  const at = await store.now();
  const ok = await store.commit(
    [{ key, version: current?.version ?? null }],
    [{ key, version: (current?.version ?? 0) + 1, value: { count } }],
  );
  record({
    type: "act",
    key: lease.key,
    holder: config.holder,
    token: lease.token,
    at,
    accepted: ok,
    ...(ok ? { order: count } : {}),
  });
  return ok;
}

let lease: Lease | undefined;
for (let op = 0; op < config.ops; op++) {
  try {
    if (!lease) {
      try {
        const granted = await engine.acquireCheckpoint({
          computerId: pick(config.computers),
          holder: config.holder,
          ttlMs: config.ttlMs,
        });
        // Unrecorded, a grant must not act: its actions would have no grant in the history.
        const seenOrder = await orderOf(granted);
        lease = granted;
        record({
          type: "grant",
          key: lease.key,
          holder: config.holder,
          token: lease.token,
          at: lease.grantedAt,
          expiresAt: lease.expiresAt,
          seenOrder,
        });
      } catch (error) {
        // Not granted: another holder's lease is live, or (CONFLICT, retryable)
        // the engine lost its compare-and-set maxAttempts times to the other
        // workers, as this test's contention means it to now and then.
        if (!AgentComputerError.is(error, "LEASE_HELD", "CONFLICT")) throw error;
      }
    } else {
      const roll = random();
      if (roll < 0.15) {
        try {
          lease = await engine.renew(lease);
          record({
            type: "renew",
            key: lease.key,
            holder: config.holder,
            token: lease.token,
            expiresAt: lease.expiresAt,
          });
        } catch (error) {
          if (!lostLease(error)) throw error;
          lease = undefined;
        }
      } else if (roll < 0.25) {
        await engine.release(lease);
        lease = undefined;
      } else if (!(config.fence ? await actFenced(lease) : await actAdvisory(lease))) {
        lease = undefined;
      }
    }
  } catch (error) {
    // A busy or unreachable store: the step did not (knowingly) happen; go on.
    if (!AgentComputerError.is(error, "UNAVAILABLE")) throw error;
  }
  await sleep(Math.floor(random() * 3));
}
if (lease) await engine.release(lease).catch(() => {});
if ("close" in store) await (store as { close(): unknown }).close();

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
