import { afterEach, describe, expect, it, vi } from "vitest";
import { LeaseEngine } from "./lease-engine.js";
import { MemoryStateStore } from "./memory-state-store.js";

const HOUR = 60 * 60 * 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("the client's wall clock jumping", () => {
  for (const jump of [HOUR, -HOUR]) {
    it(`by ${jump > 0 ? "+" : "-"}1 h changes nothing about validity or expiry`, async () => {
      const engine = new LeaseEngine(new MemoryStateStore());
      const a = await engine.acquire({ key: "k", holder: "a", ttlMs: 300 });
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(Date.now() + jump);
      // Still valid, still held, renewable: a forward jump expires nothing.
      await engine.assertCurrent(a);
      await expect(engine.acquire({ key: "k", holder: "b", ttlMs: 300 })).rejects.toMatchObject({ code: "LEASE_HELD" });
      const renewed = await engine.renew(a);
      // And a backward jump extends nothing: it lapses after its TTL of real time.
      await sleep(350);
      await expect(engine.assertCurrent(renewed)).rejects.toMatchObject({ code: "LEASE_LOST" });
      const b = await engine.acquire({ key: "k", holder: "b", ttlMs: 300 });
      expect(b.token).toBe(2);
    });
  }

  it("the engine never reads the wall clock", async () => {
    const spy = vi.spyOn(Date, "now");
    const engine = new LeaseEngine(new MemoryStateStore());
    await engine.createComputer({ computerId: "c", providerKind: "fake", homeKey: "h", storageId: "s" });
    const lease = await engine.acquireCheckpoint({ computerId: "c", holder: "a", ttlMs: 1000 });
    await engine.assertCurrent(await engine.renew(lease));
    await engine.commitRevision({ computerId: "c", lease, expectedRevision: 0, next: 1 });
    await engine.release(lease);
    expect(spy).not.toHaveBeenCalled();
  });
});
