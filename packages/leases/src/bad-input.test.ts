import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { checkCommit } from "./check-commit.js";
import { fenced } from "./fenced-machine.js";
import type { Lease } from "./lease.js";
import { LeaseEngine } from "./lease-engine.js";
import { MemoryStateStore } from "./memory-state-store.js";

async function errorOf(run: () => unknown): Promise<AgentComputerError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof AgentComputerError) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

describe("bad input gets INVALID_ARGUMENT naming the path", () => {
  const engine = new LeaseEngine(new MemoryStateStore());
  const cases: [string, () => Promise<unknown>, string][] = [
    ["empty key", () => engine.acquire({ key: "", holder: "a", ttlMs: 10 }), '"key"'],
    ["empty holder", () => engine.acquire({ key: "k", holder: "", ttlMs: 10 }), '"holder"'],
    ["negative TTL", () => engine.acquire({ key: "k", holder: "a", ttlMs: -1 }), '"ttlMs"'],
    ["zero TTL", () => engine.acquire({ key: "k", holder: "a", ttlMs: 0 }), '"ttlMs"'],
    ["NaN TTL", () => engine.acquire({ key: "k", holder: "a", ttlMs: Number.NaN }), '"ttlMs"'],
    ["infinite TTL", () => engine.acquire({ key: "k", holder: "a", ttlMs: Number.POSITIVE_INFINITY }), '"ttlMs"'],
    ["string TTL", () => engine.acquire({ key: "k", holder: "a", ttlMs: "10" as unknown as number }), '"ttlMs"'],
    ["no input", () => engine.acquire(undefined as never), "(root)"],
    ["empty bot", () => engine.acquireExecution({ computerId: "c", botId: "", holder: "a", ttlMs: 10 }), '"botId"'],
    [
      "unknown run state",
      () => engine.takeover({ computerId: "c", botId: "b", holder: "p", ttlMs: 10, run: "busy" as never }),
      '"run"',
    ],
    ["unknown purpose", () => engine.reserve({ computerId: "c", holder: "h", purpose: "nap" as never }), '"purpose"'],
    ["empty computer id", () => engine.getComputer(""), "(root)"],
    [
      "provider kind",
      () => engine.createComputer({ computerId: "c", providerKind: "Docker!", homeKey: "h", storageId: "s" }),
      '"providerKind"',
    ],
    [
      "negative revision",
      () =>
        engine.createComputer({ computerId: "c", providerKind: "fake", homeKey: "h", storageId: "s", revision: -1 }),
      '"revision"',
    ],
  ];
  for (const [name, run, path] of cases) {
    it(name, async () => {
      const error = await errorOf(run);
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toContain(path);
    });
  }

  it("refuses a lease from another engine, a copy, and a hand-made object", async () => {
    const other = new LeaseEngine(new MemoryStateStore());
    const foreign = await other.acquire({ key: "k", holder: "a", ttlMs: 1000 });
    const own = await engine.acquire({ key: "mine", holder: "a", ttlMs: 1000 });
    const forged: Lease = { ...own, token: own.token + 100 };
    for (const lease of [foreign, forged, { key: "k", token: 1 } as Lease, null as unknown as Lease]) {
      for (const call of [() => engine.renew(lease), () => engine.release(lease), () => engine.assertCurrent(lease)]) {
        const error = await errorOf(call);
        expect(error.code).toBe("INVALID_ARGUMENT");
        expect(error.message).toContain("issued by this LeaseEngine");
      }
    }
    await engine.createComputer({ computerId: "c", providerKind: "fake", homeKey: "h", storageId: "s" });
    const checkpoint = await other.acquireCheckpoint({ computerId: "c", holder: "a", ttlMs: 1000 });
    const error = await errorOf(() =>
      engine.commitRevision({ computerId: "c", lease: checkpoint, expectedRevision: 0, next: 1 }),
    );
    expect(error.message).toContain('"lease"');
    expect((await errorOf(() => fenced({} as never, forged))).code).toBe("INVALID_ARGUMENT");
    // The genuine lease still works after all that.
    await engine.assertCurrent(own);
  });

  it("refuses non-integer and backward revisions", async () => {
    await engine.createComputer({ computerId: "r", providerKind: "fake", homeKey: "h", storageId: "s" });
    const lease = await engine.acquireCheckpoint({ computerId: "r", holder: "a", ttlMs: 1000 });
    for (const [expectedRevision, next, path] of [
      [0, 0, '"next"'],
      [0.5, 1, '"expectedRevision"'],
      [3, 2, '"next"'],
    ] as const) {
      const error = await errorOf(() => engine.commitRevision({ computerId: "r", lease, expectedRevision, next }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toContain(path);
    }
  });

  it("refuses bad engine options and a store that is not one", () => {
    expect(() => new LeaseEngine({} as never)).toThrow(AgentComputerError);
    expect(() => new LeaseEngine(new MemoryStateStore(), { interruptAfterMs: -5 })).toThrow(/interruptAfterMs/);
  });
});

describe("checkCommit (what a store refuses)", () => {
  const ok = { key: "k", version: 1, value: {} };
  it.each([
    ["a blind write", [], [ok], "no expectation"],
    ["a version that skips", [{ key: "k", version: null }], [{ ...ok, version: 2 }], "expected 1"],
    ["a version that goes back", [{ key: "k", version: 3 }], [{ ...ok, version: 3 }], "expected 4"],
    [
      "a key expected twice",
      [
        { key: "k", version: null },
        { key: "k", version: null },
      ],
      [],
      "expected twice",
    ],
    ["an empty key", [{ key: "", version: null }], [], "expect.0.key"],
    ["a non-object value", [{ key: "k", version: null }], [{ ...ok, value: [] }], "JSON object"],
  ] as const)("%s", (_name, expect_, write, message) => {
    expect(() => checkCommit(expect_ as never, write as never)).toThrow(message);
  });
});
