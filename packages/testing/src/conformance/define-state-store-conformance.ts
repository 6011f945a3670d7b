import { randomUUID } from "node:crypto";
import type { ErrorCode } from "@agent-computer/core";
import type { CommitExpectation, StateStore, VersionedRecord } from "@agent-computer/leases";
import { LeaseEngine } from "@agent-computer/leases";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runLeaseContention } from "../leases/run-lease-contention.js";

export { checkFencingHistory } from "../leases/check-fencing-history.js";
export type { FencingEvent } from "../leases/fencing-event.js";
export type { FencingViolation } from "../leases/fencing-violation.js";
export type { LeaseContentionOptions } from "../leases/lease-contention-options.js";
export type { LeaseContentionResult } from "../leases/lease-contention-result.js";
export { runLeaseContention } from "../leases/run-lease-contention.js";

export interface StateStoreConformanceOptions {
  /** Shown in the suite's title. */
  name: string;
  /**
   * Called once. The suite namespaces every key with a random run id, so a
   * store on a shared database needs no cleaning between runs.
   */
  createStore: () => StateStore | Promise<StateStore>;
  /**
   * A second handle on the same data (another connection or pool), so races
   * run across handles as they do across processes. Default: the same store.
   */
  openAnother?: (store: StateStore) => StateStore | Promise<StateStore>;
  /** Closes what `createStore` and `openAnother` opened. */
  closeStore?: (store: StateStore) => unknown;
  /** Per test (default 60 s). */
  testMs?: number;
  /** Sizes of the randomized contention runs; raise the TTL for slow stores (defaults: 8 workers, 150 ops, 60 ms). */
  contention?: { workers?: number; opsPerWorker?: number; ttlMs?: number };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function rejectionCode(run: () => unknown): Promise<ErrorCode | "none" | "not an AgentComputerError"> {
  try {
    await run();
    return "none";
  } catch (error) {
    // Matched by shape, not instanceof: the store may load core's CJS build.
    const e = error as { name?: unknown; code?: unknown };
    return e?.name === "AgentComputerError" ? (e.code as ErrorCode) : "not an AgentComputerError";
  }
}

/**
 * Registers vitest suites that check a `StateStore` against the port's
 * contract and run the lease engine on it: atomic multi-key
 * compare-and-set, guards on keys that do not exist yet (write skew),
 * exact JSON round trips, copies on read, the store's own clock in
 * milliseconds, and the randomized fencing checker. Run it in a store's own
 * test file:
 *
 * ```ts
 * import { defineStateStoreConformance } from "@agent-computer/core/conformance";
 * defineStateStoreConformance({ name: "sqlite", createStore: () => openSqliteStore(file) });
 * ```
 */
export function defineStateStoreConformance(options: StateStoreConformanceOptions): void {
  const testMs = options.testMs ?? 60_000;
  const run = randomUUID().slice(0, 8);
  const k = (name: string) => `conformance/${run}/${name}`;
  let store: StateStore;
  let other: StateStore;
  // Alternates between the two handles, so races also run across connections.
  const handle = (i: number): StateStore => (i % 2 === 0 ? store : other);
  const create = (key: string, value: Record<string, unknown>, on: StateStore = store) =>
    on.commit([{ key, version: null }], [{ key, version: 1, value }]);
  const readOne = async (key: string, on: StateStore = store) => (await on.read([key])).get(key);

  describe(`StateStore conformance: ${options.name}`, () => {
    beforeAll(async () => {
      store = await options.createStore();
      other = options.openAnother ? await options.openAnother(store) : store;
    });

    afterAll(async () => {
      if (other !== store) await options.closeStore?.(other);
      await options.closeStore?.(store);
    });

    describe("read and commit", () => {
      it("reads nothing for missing keys and for no keys", async () => {
        expect((await store.read([k("missing")])).size).toBe(0);
        expect((await store.read([])).size).toBe(0);
      });

      it("creates with a null expectation and reads back exactly what was written", async () => {
        const value = { n: 1, s: "x" };
        expect(await create(k("create"), value)).toBe(true);
        expect(await readOne(k("create"))).toEqual({ key: k("create"), version: 1, value });
        expect(await readOne(k("create"), other)).toEqual({ key: k("create"), version: 1, value });
      });

      it("refuses a null expectation on an existing key and a stale version, writing nothing", async () => {
        await create(k("stale"), { v: 1 });
        expect(await create(k("stale"), { v: "again" })).toBe(false);
        expect(
          await store.commit([{ key: k("stale"), version: 1 }], [{ key: k("stale"), version: 2, value: { v: 2 } }]),
        ).toBe(true);
        expect(
          await other.commit(
            [{ key: k("stale"), version: 1 }],
            [{ key: k("stale"), version: 2, value: { v: "lost" } }],
          ),
        ).toBe(false);
        expect(await readOne(k("stale"))).toEqual({ key: k("stale"), version: 2, value: { v: 2 } });
      });

      it("applies a multi-key commit all or nothing", async () => {
        await create(k("m1"), { v: 1 });
        const failing = await store.commit(
          [
            { key: k("m1"), version: 1 },
            { key: k("m2"), version: 5 },
          ],
          [
            { key: k("m1"), version: 2, value: { v: 2 } },
            { key: k("m2"), version: 6, value: { v: 6 } },
          ],
        );
        expect(failing).toBe(false);
        expect((await readOne(k("m1")))?.version).toBe(1);
        expect(await readOne(k("m2"))).toBeUndefined();
        const both = await store.commit(
          [
            { key: k("m1"), version: 1 },
            { key: k("m2"), version: null },
          ],
          [
            { key: k("m1"), version: 2, value: { v: 2 } },
            { key: k("m2"), version: 1, value: { v: 1 } },
          ],
        );
        expect(both).toBe(true);
        const read = await store.read([k("m1"), k("m2")]);
        expect([read.get(k("m1"))?.version, read.get(k("m2"))?.version]).toEqual([2, 1]);
      });

      it("honours guard expectations that write nothing, on existing and on missing keys", async () => {
        await create(k("guard"), { v: 1 });
        const guarded = (guardVersion: number | null, guardKey: string, target: string) =>
          store.commit(
            [
              { key: guardKey, version: guardVersion },
              { key: target, version: null },
            ],
            [{ key: target, version: 1, value: { ok: true } }],
          );
        expect(await guarded(2, k("guard"), k("g-target-1"))).toBe(false);
        expect(await guarded(null, k("guard"), k("g-target-2"))).toBe(false);
        expect(await readOne(k("g-target-1"))).toBeUndefined();
        expect(await readOne(k("g-target-2"))).toBeUndefined();
        expect(await guarded(1, k("guard"), k("g-target-3"))).toBe(true);
        expect(await guarded(null, k("guard-missing"), k("g-target-4"))).toBe(true);
        // A guard on a missing key must fail once that key appears.
        await create(k("guard-missing"), {});
        expect(await guarded(null, k("guard-missing"), k("g-target-5"))).toBe(false);
      });

      it("a read after a commit returned sees it, also on another handle", async () => {
        // The fencing checker orders a grant by the revision read once the grant
        // returned (docs/architecture.md §12): a stale read there would hide a
        // fenced-out action, so a store must never serve one.
        const key = k("read-your-commit");
        expect(await create(key, { n: 0 })).toBe(true);
        for (let n = 1; n <= 40; n++) {
          const ok = await handle(n).commit([{ key, version: n }], [{ key, version: n + 1, value: { n } }]);
          expect(ok).toBe(true);
          expect(await readOne(key, handle(n + 1))).toEqual({ key, version: n + 1, value: { n } });
        }
      });

      it("refuses malformed commits with INVALID_ARGUMENT (checkCommit)", async () => {
        const key = k("malformed");
        const cases: [CommitExpectation[], VersionedRecord[]][] = [
          [[], [{ key, version: 1, value: {} }]],
          [[{ key, version: null }], [{ key, version: 2, value: {} }]],
          [[{ key: "", version: null }], []],
        ];
        for (const [expectations, writes] of cases) {
          expect(await rejectionCode(() => store.commit(expectations, writes))).toBe("INVALID_ARGUMENT");
        }
        expect(await readOne(key)).toBeUndefined();
      });

      it("round-trips JSON values and unusual keys exactly", async () => {
        const value = {
          text: "héllo 🌍 \u0000 \"quoted\" 'single' \\ back",
          empty: "",
          big: Number.MAX_SAFE_INTEGER,
          negative: -42.5,
          tiny: 1e-9,
          flags: [true, false, null],
          nested: { a: { b: { c: [1, { d: "e" }] } } },
        };
        const keys = [k("slash/and%percent"), k("ünïcödé 键"), k(`quote'"; DROP TABLE x;--`), k("x".repeat(900))];
        for (const key of keys) {
          expect(await create(key, value)).toBe(true);
          expect(await readOne(key, other)).toEqual({ key, version: 1, value });
        }
      });

      it("hands out copies: changing what was read or written changes nothing stored", async () => {
        const written = { list: [1, 2], inner: { n: 1 } };
        await create(k("copies"), written);
        written.list.push(3);
        written.inner.n = 99;
        const first = await readOne(k("copies"));
        if (!first) throw new Error("the record vanished");
        (first.value.list as number[]).push(4);
        expect((await readOne(k("copies")))?.value).toEqual({ list: [1, 2], inner: { n: 1 } });
      });

      it(
        "reads many keys at once",
        async () => {
          const keys = Array.from({ length: 300 }, (_, i) => k(`many-${i}`));
          await Promise.all(keys.map((key, i) => create(key, { i })));
          const read = await other.read([...keys, k("many-missing")]);
          expect(read.size).toBe(300);
          expect(read.get(keys[123] as string)?.value).toEqual({ i: 123 });
        },
        testMs,
      );
    });

    describe("races", () => {
      it(
        "lets exactly one of many concurrent creators of a key win",
        async () => {
          for (let round = 0; round < 10; round++) {
            const key = k(`create-race-${round}`);
            const results = await Promise.all(
              Array.from({ length: 24 }, (_, i) => create(key, { winner: i }, handle(i))),
            );
            const winners = results.flatMap((ok, i) => (ok ? [i] : []));
            expect(winners).toHaveLength(1);
            expect((await readOne(key))?.value).toEqual({ winner: winners[0] });
          }
        },
        testMs,
      );

      it(
        "lets exactly one of many concurrent updaters of a version win",
        async () => {
          const key = k("update-race");
          await create(key, { by: -1 });
          for (let version = 1; version <= 10; version++) {
            const results = await Promise.all(
              Array.from({ length: 24 }, (_, i) =>
                handle(i).commit([{ key, version }], [{ key, version: version + 1, value: { by: i } }]),
              ),
            );
            expect(results.filter(Boolean)).toHaveLength(1);
          }
          expect((await readOne(key))?.version).toBe(11);
        },
        testMs,
      );

      it(
        "loses no update under compare-and-set retry loops",
        async () => {
          const key = k("counter");
          await create(key, { n: 0 });
          const increment = async (on: StateStore) => {
            for (;;) {
              const current = await readOne(key, on);
              if (!current) throw new Error("counter vanished");
              const n = current.value.n as number;
              const next = { key, version: current.version + 1, value: { n: n + 1 } };
              if (await on.commit([{ key, version: current.version }], [next])) return;
            }
          };
          await Promise.all(
            Array.from({ length: 8 }, async (_, w) => {
              for (let i = 0; i < 25; i++) await increment(handle(w));
            }),
          );
          expect(await readOne(key)).toEqual({ key, version: 201, value: { n: 200 } });
        },
        testMs,
      );

      it(
        "never lets two commits that each guard the other's missing key both succeed (write skew)",
        async () => {
          // Row locks alone do not see rows that do not exist yet; a store
          // must serialise these (SERIALIZABLE, a lock on the expectation
          // keys, or an insert that conflicts), or reservations and execution
          // leases could both be granted.
          let both = 0;
          for (let round = 0; round < 40; round++) {
            const x = k(`skew-${round}-x`);
            const y = k(`skew-${round}-y`);
            const [a, b] = await Promise.all([
              store.commit(
                [
                  { key: x, version: null },
                  { key: y, version: null },
                ],
                [{ key: y, version: 1, value: { by: "a" } }],
              ),
              other.commit(
                [
                  { key: y, version: null },
                  { key: x, version: null },
                ],
                [{ key: x, version: 1, value: { by: "b" } }],
              ),
            ]);
            if (a && b) both++;
          }
          expect(both).toBe(0);
        },
        testMs,
      );

      it(
        "keeps a two-key invariant under concurrent multi-key commits",
        async () => {
          const [x, y] = [k("sum-x"), k("sum-y")];
          await create(x, { n: 100 });
          await create(y, { n: 100 });
          const move = async (on: StateStore, from: string, to: string) => {
            for (;;) {
              const read = await on.read([from, to]);
              const f = read.get(from) as VersionedRecord;
              const t = read.get(to) as VersionedRecord;
              const ok = await on.commit(
                [
                  { key: from, version: f.version },
                  { key: to, version: t.version },
                ],
                [
                  { key: from, version: f.version + 1, value: { n: (f.value.n as number) - 1 } },
                  { key: to, version: t.version + 1, value: { n: (t.value.n as number) + 1 } },
                ],
              );
              if (ok) return;
            }
          };
          await Promise.all(
            Array.from({ length: 8 }, async (_, w) => {
              for (let i = 0; i < 10; i++) await move(handle(w), w % 2 ? x : y, w % 2 ? y : x);
            }),
          );
          const read = await store.read([x, y]);
          expect((read.get(x)?.value.n as number) + (read.get(y)?.value.n as number)).toBe(200);
          expect((read.get(x)?.version ?? 0) + (read.get(y)?.version ?? 0)).toBe(2 + 2 * 80);
        },
        testMs,
      );
    });

    describe("clock", () => {
      it("reads milliseconds since the epoch (not seconds, not microseconds)", async () => {
        const first = await store.now();
        expect(Number.isFinite(first)).toBe(true);
        expect(first).toBeGreaterThan(Date.UTC(2020, 0, 1));
        expect(first).toBeLessThan(Date.UTC(2100, 0, 1));
        await sleep(120);
        const delta = (await store.now()) - first;
        expect(delta).toBeGreaterThanOrEqual(60);
        expect(delta).toBeLessThan(10_000);
      });

      it("never goes backwards across calls and handles", async () => {
        let last = await store.now();
        for (let i = 0; i < 100; i++) {
          const now = await handle(i).now();
          expect(now).toBeGreaterThanOrEqual(last);
          last = now;
        }
      });

      for (const jump of [3_600_000, -3_600_000]) {
        it(`is the store's, not this process's Date: a ${jump > 0 ? "+" : "-"}1 h wall-clock jump does not move it`, async () => {
          const before = await store.now();
          vi.useFakeTimers({ toFake: ["Date"] });
          try {
            vi.setSystemTime(Date.now() + jump);
            const during = await store.now();
            expect(Math.abs(during - before)).toBeLessThan(10 * 60_000);
          } finally {
            vi.useRealTimers();
          }
        });
      }
    });

    describe("the lease engine on this store", () => {
      it(
        "grows tokens across releases and grants one of many concurrent acquirers",
        async () => {
          const engines = [store, other].map((s) => new LeaseEngine(s));
          const e0 = engines[0] as LeaseEngine;
          const tokens: number[] = [];
          for (let i = 0; i < 4; i++) {
            const lease = await e0.acquire({ key: k("tokens"), holder: `h${i}`, ttlMs: 10_000 });
            tokens.push(lease.token);
            await e0.release(lease);
          }
          expect(tokens).toEqual([1, 2, 3, 4]);
          const results = await Promise.allSettled(
            Array.from({ length: 16 }, (_, i) =>
              (engines[i % 2] as LeaseEngine).acquire({ key: k("tokens"), holder: `c${i}`, ttlMs: 10_000 }),
            ),
          );
          const granted = results.filter((r) => r.status === "fulfilled");
          expect(granted).toHaveLength(1);
          expect((granted[0] as PromiseFulfilledResult<{ token: number }>).value.token).toBe(5);
        },
        testMs,
      );

      it(
        "expires leases by the store's clock",
        async () => {
          const engine = new LeaseEngine(store);
          await engine.acquire({ key: k("expiry"), holder: "a", ttlMs: 300 });
          expect(await rejectionCode(() => engine.acquire({ key: k("expiry"), holder: "b", ttlMs: 300 }))).toBe(
            "LEASE_HELD",
          );
          await sleep(400);
          expect((await engine.acquire({ key: k("expiry"), holder: "b", ttlMs: 300 })).token).toBe(2);
        },
        testMs,
      );

      it(
        "refuses the ABA commit: token 5 read revision 10, token 6 was granted, 5 commits 11",
        async () => {
          const engine = new LeaseEngine(store);
          const otherEngine = new LeaseEngine(other);
          const computerId = k("aba");
          await engine.createComputer({ computerId, providerKind: "fake", homeKey: "h", storageId: "s", revision: 10 });
          const a = await engine.acquireCheckpoint({ computerId, holder: "a", ttlMs: 200 });
          const read = await engine.getComputer(computerId);
          await sleep(250);
          await otherEngine.acquireCheckpoint({ computerId, holder: "b", ttlMs: 10_000 });
          const code = await rejectionCode(() =>
            engine.commitRevision({ computerId, lease: a, expectedRevision: read?.revision ?? -1, next: 11 }),
          );
          expect(code).toBe("FENCED_OUT");
          expect((await otherEngine.getComputer(computerId))?.revision).toBe(10);
        },
        testMs,
      );

      it(
        "passes the randomized fencing checker, and the checker catches the unfenced variant",
        async () => {
          const size = {
            workers: options.contention?.workers ?? 8,
            opsPerWorker: options.contention?.opsPerWorker ?? 150,
            ttlMs: options.contention?.ttlMs ?? 60,
          };
          const fencedRun = await runLeaseContention({ engine: new LeaseEngine(store), keys: 2, seed: 11, ...size });
          expect(fencedRun.violations).toEqual([]);
          expect(fencedRun.stats.accepted).toBeGreaterThan(0);
          const unfenced = await runLeaseContention({
            engine: new LeaseEngine(store),
            keys: 2,
            seed: 12,
            fence: false,
            pauseChance: 0.1,
            ...size,
          });
          expect(unfenced.violations.length).toBeGreaterThan(0);
        },
        Math.max(testMs, 120_000),
      );
    });
  });
}
