import { randomUUID } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import type { Lease } from "@agent-computer/leases";
import { type ComputerValue, computerValueOf, derivedKey } from "@agent-computer/leases";
import { checkFencingHistory } from "./check-fencing-history.js";
import type { FencingEvent } from "./fencing-event.js";
import type { LeaseContentionOptions } from "./lease-contention-options.js";
import type { LeaseContentionResult } from "./lease-contention-result.js";

/**
 * The randomized contention test of the lease engine: workers acquire,
 * renew, act on and release the checkpoint leases of a few computers, with
 * random delays and pauses longer than the TTL; every grant, renewal and
 * action is recorded with its token and checked by `checkFencingHistory`.
 * An action advances the computer's revision by one, so the revision is the
 * resource's own order of accepted actions; each grant records the revision
 * it saw once committed, which orders it among them.
 */
export async function runLeaseContention(options: LeaseContentionOptions): Promise<LeaseContentionResult> {
  const { engine } = options;
  const keyCount = options.keys ?? 3;
  const workerCount = options.workers ?? 12;
  const ops = options.opsPerWorker ?? 300;
  const ttlMs = options.ttlMs ?? 40;
  const pauseMs = options.pauseMs ?? ttlMs * 1.5;
  const pauseChance = options.pauseChance ?? 0.05;
  const fence = options.fence ?? true;
  const rootRandom = mulberry32(options.seed ?? 1);
  const run = randomUUID().slice(0, 8);
  const computers = Array.from({ length: keyCount }, (_, i) => `contention-${run}-${i}`);
  for (const computerId of computers) {
    await engine.createComputer({ computerId, providerKind: "fake", homeKey: computerId, storageId: computerId });
  }

  const events: FencingEvent[] = [];
  const stats = { operations: 0, grants: 0, accepted: 0, refused: 0, pauses: 0 };
  const now = () => engine.store.now();
  // The resource's order after a grant: both ways of acting advance the revision.
  const revisionOf = async (computerId: string) => {
    const computer = await engine.getComputer(computerId);
    if (!computer) throw new AgentComputerError("NOT_FOUND", `contention computer ${computerId} vanished`);
    return computer.revision;
  };

  const worker = async (index: number, random: () => number) => {
    const holder = `worker-${index}`;
    let lease: Lease | undefined;
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
    const drop = (error: unknown) => {
      if (!AgentComputerError.is(error, "LEASE_LOST", "FENCED_OUT")) throw error;
      lease = undefined;
    };
    const pause = async () => {
      if (random() >= pauseChance) return;
      stats.pauses++;
      await sleep(pauseMs + random() * ttlMs);
    };

    for (let op = 0; op < ops; op++) {
      stats.operations++;
      const roll = random();
      if (!lease) {
        const computerId = pick(computers);
        try {
          lease = await engine.acquireCheckpoint({ computerId, holder, ttlMs });
          stats.grants++;
          events.push({
            type: "grant",
            key: lease.key,
            holder,
            token: lease.token,
            at: lease.grantedAt,
            expiresAt: lease.expiresAt,
            seenOrder: await revisionOf(computerId),
          });
        } catch (error) {
          if (!AgentComputerError.is(error, "LEASE_HELD")) throw error;
        }
      } else if (roll < 0.15) {
        try {
          lease = await engine.renew(lease);
          events.push({ type: "renew", key: lease.key, holder, token: lease.token, expiresAt: lease.expiresAt });
        } catch (error) {
          drop(error);
        }
      } else if (roll < 0.25) {
        await engine.release(lease);
        lease = undefined;
      } else {
        const held: Lease = lease;
        const computerId = held.computerId as string;
        const result = fence ? await actFenced(held, computerId, pause) : await actAdvisory(held, computerId, pause);
        if (result.at !== undefined) {
          events.push({
            type: "act",
            key: held.key,
            holder,
            token: held.token,
            at: result.at,
            accepted: result.accepted,
            ...(result.order === undefined ? {} : { order: result.order }),
          });
        }
        if (result.accepted) stats.accepted++;
        else {
          stats.refused++;
          lease = undefined;
        }
      }
      await sleep(Math.floor(random() * 3));
    }
    if (lease) await engine.release(lease);
  };

  // The fenced way: the commit itself checks the token and the expiry.
  const actFenced = async (lease: Lease, computerId: string, pause: () => Promise<void>) => {
    const computer = await engine.getComputer(computerId);
    if (!computer) throw new AgentComputerError("NOT_FOUND", `contention computer ${computerId} vanished`);
    await pause();
    const at = await now();
    try {
      const next = await engine.commitRevision({
        computerId,
        lease,
        expectedRevision: computer.revision,
        next: computer.revision + 1,
      });
      return { at, accepted: true, order: next.revision };
    } catch (error) {
      if (!AgentComputerError.is(error, "LEASE_LOST", "FENCED_OUT", "CONFLICT")) throw error;
      return { at, accepted: false };
    }
  };

  // The naive way: check, then write with a version-only compare-and-set.
  // A worker paused between the two acts with a lease it no longer holds.
  const actAdvisory = async (lease: Lease, computerId: string, pause: () => Promise<void>) => {
    try {
      await engine.assertCurrent(lease);
    } catch (error) {
      if (!AgentComputerError.is(error, "LEASE_LOST", "FENCED_OUT")) throw error;
      return { at: undefined, accepted: false };
    }
    await pause();
    const key = derivedKey.computer(computerId);
    const record = (await engine.store.read([key])).get(key);
    const value = computerValueOf(record) as ComputerValue;
    if (!record || !value.fields)
      throw new AgentComputerError("NOT_FOUND", `contention computer ${computerId} vanished`);
    const revision = value.fields.revision + 1;
    const at = await now();
    const ok = await engine.store.commit(
      [{ key, version: record.version }],
      [{ key, version: record.version + 1, value: { ...value, fields: { ...value.fields, revision } } }],
    );
    return ok ? { at, accepted: true, order: revision } : { at, accepted: false };
  };

  await Promise.all(
    Array.from({ length: workerCount }, (_, i) => worker(i, mulberry32(Math.floor(rootRandom() * 2 ** 32)))),
  );
  return { events, violations: checkFencingHistory(events), stats };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => (ms <= 0 ? setImmediate(resolve) : setTimeout(resolve, ms)));
}

/** A small seeded generator, so a failing run's choices can be replayed. */
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
