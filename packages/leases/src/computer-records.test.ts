import { AgentComputerError } from "@agent-computer/core";
import { manualEngine } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { scopeOf } from "./scope-of.js";

async function errorOf(promise: Promise<unknown>): Promise<AgentComputerError | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (error instanceof AgentComputerError) return error;
    throw error;
  }
}

const computer = {
  computerId: "c1",
  providerKind: "docker",
  providerRef: "docker:abc",
  homeKey: "home-1",
  storageId: "s-1",
} as const;

describe("computer records", () => {
  it("create, get, update by compare-and-set, delete", async () => {
    const { engine } = manualEngine();
    const created = await engine.createComputer({ ...computer, wrappedDataKey: "wrapped" });
    expect(created).toMatchObject({ ...computer, revision: 0, runs: [], wrappedDataKey: "wrapped", version: 1 });
    expect(await engine.getComputer("c1")).toEqual(created);
    expect((await errorOf(engine.createComputer(computer)))?.code).toBe("CONFLICT");

    const run = { runId: "r1", startedAt: 10 };
    const updated = await engine.updateComputer({
      computerId: "c1",
      expectedVersion: created.version,
      changes: { providerRef: "docker:def", runs: [run], wrappedDataKey: null },
    });
    expect(updated).toMatchObject({ providerRef: "docker:def", runs: [run], version: 2 });
    expect(updated.wrappedDataKey).toBeUndefined();
    // The caller that still holds version 1 loses.
    const stale = await errorOf(
      engine.updateComputer({ computerId: "c1", expectedVersion: 1, changes: { homeKey: "x" } }),
    );
    expect(stale?.code).toBe("CONFLICT");

    expect((await errorOf(engine.deleteComputer({ computerId: "c1", expectedVersion: 1 })))?.code).toBe("CONFLICT");
    expect(await engine.deleteComputer({ computerId: "c1" })).toBe(true);
    expect(await engine.deleteComputer({ computerId: "c1" })).toBe(false);
    expect(await engine.getComputer("c1")).toBeUndefined();
    expect((await errorOf(engine.updateComputer({ computerId: "c1", expectedVersion: 2, changes: {} })))?.code).toBe(
      "NOT_FOUND",
    );
    // Re-created over the tombstone: versions keep growing, so no stale expectedVersion matches.
    expect((await engine.createComputer(computer)).version).toBe(4);
  });

  it("refuses a revision in updateComputer and a ref of another kind", async () => {
    const { engine } = manualEngine();
    const c = await engine.createComputer(computer);
    const revision = await errorOf(
      engine.updateComputer({ computerId: "c1", expectedVersion: c.version, changes: { revision: 5 } as never }),
    );
    expect(revision?.code).toBe("INVALID_ARGUMENT");
    const kind = await errorOf(
      engine.updateComputer({ computerId: "c1", expectedVersion: c.version, changes: { providerKind: "e2b" } }),
    );
    expect(kind?.code).toBe("INVALID_ARGUMENT");
    expect(kind?.message).toContain("providerRef");
  });

  it("store a computer's scope; a record without one (written before scopes) reads as team", async () => {
    const { engine } = manualEngine();
    const own = await engine.createComputer({ ...computer, scope: { kind: "private", botId: "alpha" } });
    expect(own.scope).toEqual({ kind: "private", botId: "alpha" });
    expect(scopeOf(own)).toEqual({ kind: "private", botId: "alpha" });

    const old = await engine.createComputer({ ...computer, computerId: "c2" });
    expect(old.scope).toBeUndefined();
    expect(scopeOf(old)).toEqual({ kind: "team" });
    const named = await engine.updateComputer({
      computerId: "c2",
      expectedVersion: old.version,
      changes: { scope: { kind: "team" } },
    });
    expect((await engine.getComputer("c2"))?.scope).toEqual({ kind: "team" });

    for (const scope of [{ kind: "private" }, { kind: "private", botId: "../x" }, { kind: "shared" }]) {
      const error = await errorOf(
        engine.updateComputer({ computerId: "c2", expectedVersion: named.version, changes: { scope } as never }),
      );
      expect(error?.code).toBe("INVALID_ARGUMENT");
      expect(error?.message).toContain('"changes.scope');
    }
  });
});

describe("commitRevision", () => {
  it("advances the revision under the current checkpoint lease", async () => {
    const { engine } = manualEngine();
    await engine.createComputer(computer);
    const lease = await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: 1000 });
    const next = await engine.commitRevision({ computerId: "c1", lease, expectedRevision: 0, next: 1 });
    expect(next.revision).toBe(1);
    expect(
      (await errorOf(engine.commitRevision({ computerId: "c1", lease, expectedRevision: 0, next: 2 })))?.code,
    ).toBe("CONFLICT");
  });

  it("refuses the ABA case: A (token 5) read revision 10, B acquired token 6, A commits 11", async () => {
    const { engine, advance } = manualEngine();
    await engine.createComputer({ ...computer, revision: 10 });
    for (let i = 0; i < 4; i++)
      await engine.release(await engine.acquireCheckpoint({ computerId: "c1", holder: "x", ttlMs: 100 }));
    const a = await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: 100 });
    expect(a.token).toBe(5);
    const read = await engine.getComputer("c1");
    expect(read?.revision).toBe(10);
    advance(100); // A pauses past its TTL
    const b = await engine.acquireCheckpoint({ computerId: "c1", holder: "b", ttlMs: 100 });
    expect(b.token).toBe(6);
    // The revision is still 10: a version-only compare-and-set would let A through.
    const error = await errorOf(engine.commitRevision({ computerId: "c1", lease: a, expectedRevision: 10, next: 11 }));
    expect(error?.code).toBe("FENCED_OUT");
    expect((await engine.getComputer("c1"))?.revision).toBe(10);
    expect((await engine.commitRevision({ computerId: "c1", lease: b, expectedRevision: 10, next: 11 })).revision).toBe(
      11,
    );
  });

  it("refuses an expired or released lease with LEASE_LOST, and a lease of another computer or kind", async () => {
    const { engine, advance } = manualEngine();
    await engine.createComputer(computer);
    await engine.createComputer({ ...computer, computerId: "c2" });
    const lease = await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: 100 });
    const other = await engine.acquireCheckpoint({ computerId: "c2", holder: "a", ttlMs: 100 });
    const exec = await engine.acquireExecution({ computerId: "c1", botId: "b", holder: "a", ttlMs: 100 });
    for (const wrong of [other, exec]) {
      const e = await errorOf(engine.commitRevision({ computerId: "c1", lease: wrong, expectedRevision: 0, next: 1 }));
      expect(e?.code).toBe("INVALID_ARGUMENT");
      expect(e?.message).toContain('"lease"');
    }
    advance(100);
    expect(
      (await errorOf(engine.commitRevision({ computerId: "c1", lease, expectedRevision: 0, next: 1 })))?.code,
    ).toBe("LEASE_LOST");
    const again = await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: 100 });
    await engine.release(again);
    expect(
      (await errorOf(engine.commitRevision({ computerId: "c1", lease: again, expectedRevision: 0, next: 1 })))?.code,
    ).toBe("LEASE_LOST");
    expect((await engine.getComputer("c1"))?.revision).toBe(0);
  });

  it("gives NOT_FOUND for a deleted computer, and its lease tokens survive the deletion", async () => {
    const { engine } = manualEngine();
    await engine.createComputer(computer);
    const lease = await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: 1000 });
    await engine.deleteComputer({ computerId: "c1" });
    expect(
      (await errorOf(engine.commitRevision({ computerId: "c1", lease, expectedRevision: 0, next: 1 })))?.code,
    ).toBe("NOT_FOUND");
    await engine.release(lease);
    await engine.createComputer(computer);
    expect((await engine.acquireCheckpoint({ computerId: "c1", holder: "b", ttlMs: 1000 })).token).toBe(2);
  });

  it("checks the lease and the revision together: a racing renew makes it re-read, not fail", async () => {
    const { engine } = manualEngine();
    await engine.createComputer(computer);
    const lease = await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: 1000 });
    const [committed] = await Promise.all([
      engine.commitRevision({ computerId: "c1", lease, expectedRevision: 0, next: 1 }),
      engine.renew(lease),
      engine.renew(lease),
    ]);
    expect(committed.revision).toBe(1);
  });
});
