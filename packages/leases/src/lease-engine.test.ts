import { AgentComputerError } from "@agent-computer/core";
import { manualEngine } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { LeaseEngine } from "./lease-engine.js";
import { MemoryStateStore } from "./memory-state-store.js";

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (error instanceof AgentComputerError) return error.code;
    throw error;
  }
}

describe("acquire", () => {
  it("grants token 1, refuses another holder with LEASE_HELD, and grows the token across releases", async () => {
    const { engine } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 1000 });
    expect(a).toMatchObject({ kind: "custom", key: "k", holder: "a", token: 1, ttlMs: 1000 });
    expect(await codeOf(engine.acquire({ key: "k", holder: "b", ttlMs: 1000 }))).toBe("LEASE_HELD");
    await engine.release(a);
    const b = await engine.acquire({ key: "k", holder: "b", ttlMs: 1000 });
    await engine.release(b);
    const c = await engine.acquire({ key: "k", holder: "a", ttlMs: 1000 });
    expect([b.token, c.token]).toEqual([2, 3]);
  });

  it("hands an expired key to the next holder with a larger token", async () => {
    const { engine, advance } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    advance(99);
    expect(await codeOf(engine.acquire({ key: "k", holder: "b", ttlMs: 100 }))).toBe("LEASE_HELD");
    advance(1);
    const b = await engine.acquire({ key: "k", holder: "b", ttlMs: 100 });
    expect(b.token).toBe(a.token + 1);
  });

  it("keeps keys independent", async () => {
    const { engine } = manualEngine();
    const a = await engine.acquire({ key: "k1", holder: "a", ttlMs: 100 });
    const b = await engine.acquire({ key: "k2", holder: "b", ttlMs: 100 });
    expect([a.token, b.token]).toEqual([1, 1]);
  });

  it("grants one of many concurrent acquirers of a key", async () => {
    const engine = new LeaseEngine(new MemoryStateStore());
    const results = await Promise.allSettled(
      Array.from({ length: 32 }, (_, i) => engine.acquire({ key: "hot", holder: `h${i}`, ttlMs: 10_000 })),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const r of results)
      if (r.status === "rejected") expect((r.reason as AgentComputerError).code).toBe("LEASE_HELD");
  });
});

describe("renew", () => {
  it("extends a live lease by its TTL and keeps the token", async () => {
    const { engine, advance } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    advance(80);
    const renewed = await engine.renew(a);
    expect(renewed.token).toBe(a.token);
    expect(renewed.expiresAt).toBe(a.expiresAt + 80);
    advance(80);
    await engine.assertCurrent(renewed);
    expect(await codeOf(engine.acquire({ key: "k", holder: "b", ttlMs: 100 }))).toBe("LEASE_HELD");
  });

  it("never revives an expired lease, even before anyone else took it", async () => {
    const { engine, time } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    time.store += 100; // only the store's clock moves: the client's deadline is not what refuses here
    expect(await codeOf(engine.renew(a))).toBe("LEASE_LOST");
  });

  it("refuses a released lease with LEASE_LOST and a superseded one with FENCED_OUT", async () => {
    const { engine, time } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    await engine.release(a);
    expect(await codeOf(engine.renew(a))).toBe("LEASE_LOST");
    const b = await engine.acquire({ key: "k", holder: "b", ttlMs: 100 });
    time.store += 100;
    await engine.acquire({ key: "k", holder: "c", ttlMs: 100 });
    expect(await codeOf(engine.renew(b))).toBe("FENCED_OUT");
  });
});

describe("release", () => {
  it("is idempotent and an old holder's late release leaves the newer lease intact", async () => {
    const { engine, time } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    time.store += 100;
    const b = await engine.acquire({ key: "k", holder: "b", ttlMs: 100 });
    await engine.release(a);
    await engine.release(a);
    await engine.assertCurrent(b);
    expect(await codeOf(engine.acquire({ key: "k", holder: "c", ttlMs: 100 }))).toBe("LEASE_HELD");
    await engine.release(b);
    await engine.release(b);
    expect((await engine.acquire({ key: "k", holder: "c", ttlMs: 100 })).token).toBe(3);
  });
});

describe("assertCurrent", () => {
  it("passes for the live holder, FENCED_OUT once a newer token exists, LEASE_LOST once expired by the store", async () => {
    const { engine, time } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    await engine.assertCurrent(a);
    time.store += 100;
    expect(await codeOf(engine.assertCurrent(a))).toBe("LEASE_LOST");
    await engine.acquire({ key: "k", holder: "b", ttlMs: 100 });
    expect(await codeOf(engine.assertCurrent(a))).toBe("FENCED_OUT");
  });

  it("gives LEASE_LOST once the client's monotonic deadline passed, even if the store's clock lags", async () => {
    const { engine, time } = manualEngine();
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    time.client += 100;
    expect(await codeOf(engine.assertCurrent(a))).toBe("LEASE_LOST");
    expect(await codeOf(engine.renew(a))).toBe("LEASE_LOST");
  });

  it("measures the client deadline from before the request, so a slow store shortens it", async () => {
    const time = { client: 0, store: 1_000, delay: 30 };
    const store = new MemoryStateStore({ clock: () => time.store });
    const slow = {
      read: store.read.bind(store),
      commit: store.commit.bind(store),
      now: async () => {
        time.client += time.delay; // the request spends this long on the way
        return store.now();
      },
    };
    const engine = new LeaseEngine(slow, { monotonicNow: () => time.client });
    const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 100 });
    time.delay = 0;
    time.client = 99;
    await engine.assertCurrent(a);
    time.client = 100; // 100 ms after the request began, only 70 ms after the store granted it
    expect(await codeOf(engine.assertCurrent(a))).toBe("LEASE_LOST");
  });
});
