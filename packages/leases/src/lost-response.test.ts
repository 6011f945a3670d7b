import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import type { CommitExpectation } from "./commit-expectation.js";
import { LeaseEngine } from "./lease-engine.js";
import { MemoryStateStore } from "./memory-state-store.js";
import type { StateStore } from "./state-store.js";
import type { VersionedRecord } from "./versioned-record.js";

/** A store whose next commit is applied but whose answer never arrives, like a connection cut after COMMIT. */
function lossyStore() {
  const inner = new MemoryStateStore();
  let loseNext = false;
  const store: StateStore = {
    read: (keys) => inner.read(keys),
    now: () => inner.now(),
    async commit(expect: readonly CommitExpectation[], write: readonly VersionedRecord[]) {
      const applied = await inner.commit(expect, write);
      if (loseNext) {
        loseNext = false;
        throw new AgentComputerError("UNAVAILABLE", "connection lost after the commit was sent");
      }
      return applied;
    },
  };
  return { store, loseNextResponse: () => (loseNext = true) };
}

describe("a response lost after the store applied it", () => {
  it("acquire: the retry returns the same token and grants no second one", async () => {
    const { store, loseNextResponse } = lossyStore();
    const engine = new LeaseEngine(store);
    loseNextResponse();
    await expect(engine.acquire({ key: "k", holder: "a", ttlMs: 10_000 })).rejects.toMatchObject({
      code: "UNAVAILABLE",
    });
    const retried = await engine.acquire({ key: "k", holder: "a", ttlMs: 10_000 });
    expect(retried.token).toBe(1);
    await expect(engine.acquire({ key: "k", holder: "b", ttlMs: 10_000 })).rejects.toMatchObject({
      code: "LEASE_HELD",
    });
    await engine.release(retried);
    expect((await engine.acquire({ key: "k", holder: "b", ttlMs: 10_000 })).token).toBe(2);
  });

  it("commitRevision: the retry recognises its applied commit instead of failing with CONFLICT", async () => {
    const { store, loseNextResponse } = lossyStore();
    const engine = new LeaseEngine(store);
    await engine.createComputer({ computerId: "c", providerKind: "fake", homeKey: "h", storageId: "s" });
    const lease = await engine.acquireCheckpoint({ computerId: "c", holder: "a", ttlMs: 10_000 });
    loseNextResponse();
    await expect(engine.commitRevision({ computerId: "c", lease, expectedRevision: 0, next: 1 })).rejects.toMatchObject(
      {
        code: "UNAVAILABLE",
      },
    );
    const retried = await engine.commitRevision({ computerId: "c", lease, expectedRevision: 0, next: 1 });
    expect(retried.revision).toBe(1);
    // Only the same commit replays: anything else is judged on the current state.
    await expect(engine.commitRevision({ computerId: "c", lease, expectedRevision: 0, next: 2 })).rejects.toMatchObject(
      {
        code: "CONFLICT",
      },
    );
  });

  it("commitRevision: a replay is not honoured for another holder's token", async () => {
    const { store, loseNextResponse } = lossyStore();
    const time = { now: 1_000 };
    const engine = new LeaseEngine(store, { monotonicNow: () => time.now });
    await engine.createComputer({ computerId: "c", providerKind: "fake", homeKey: "h", storageId: "s" });
    const a = await engine.acquireCheckpoint({ computerId: "c", holder: "a", ttlMs: 60_000 });
    loseNextResponse();
    await engine.commitRevision({ computerId: "c", lease: a, expectedRevision: 0, next: 1 }).catch(() => {});
    await engine.release(a);
    const b = await engine.acquireCheckpoint({ computerId: "c", holder: "b", ttlMs: 60_000 });
    await expect(
      engine.commitRevision({ computerId: "c", lease: b, expectedRevision: 0, next: 1 }),
    ).rejects.toMatchObject({
      code: "CONFLICT",
    });
  });
});
