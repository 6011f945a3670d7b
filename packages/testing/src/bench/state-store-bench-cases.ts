import type { StateStore } from "@agent-computer/leases";
import { LeaseEngine } from "@agent-computer/leases";
import type { BenchCase } from "./bench-case.js";

export interface StateStoreBenchOptions {
  /** Names the store in the figures ("SQLite", "PostgreSQL"). */
  label: string;
  /** The store under test (one handle shared by the concurrent holders). */
  store: StateStore;
  /** The store's cheapest round trip (an empty transaction, `SELECT 1`): the baseline. */
  roundTrip: { label: string; run(): Promise<unknown> };
  /** Lease operations per run, split over the holders (default 400). */
  opsPerRun?: number;
  holders?: readonly number[];
}

/**
 * Acquire+release and renew throughput of the lease engine on a store, with
 * 1, 8 and 32 concurrent holders, each beside the store's bare round trip
 * at the same concurrency: the ratio is what a lease decision costs in
 * round trips of that store.
 */
export async function stateStoreBenchCases(options: StateStoreBenchOptions): Promise<BenchCase[]> {
  const total = options.opsPerRun ?? 400;
  const engine = new LeaseEngine(options.store);
  const cases: BenchCase[] = [];
  const tag = Math.random().toString(36).slice(2, 8);
  for (const holders of options.holders ?? [1, 8, 32]) {
    const per = Math.max(1, Math.floor(total / holders));
    const loop = (body: (holder: number) => Promise<unknown>) => () =>
      Promise.all(
        Array.from({ length: holders }, async (_, h) => {
          for (let i = 0; i < per; i++) await body(h);
        }),
      );
    const baseline = { label: `${options.roundTrip.label}`, run: loop(() => options.roundTrip.run()) };
    cases.push({
      name: `${options.label}: acquire+release, ${holders} holder(s)`,
      unit: "ops/s",
      work: per * holders,
      subject: {
        label: "LeaseEngine",
        run: loop(async (h) => {
          const lease = await engine.acquire({ key: `bench-${tag}-${holders}-${h}`, holder: `h${h}`, ttlMs: 60_000 });
          await engine.release(lease);
        }),
      },
      baseline,
    });
    const leases = await Promise.all(
      Array.from({ length: holders }, (_, h) =>
        engine.acquire({ key: `bench-renew-${tag}-${holders}-${h}`, holder: `h${h}`, ttlMs: 3_600_000 }),
      ),
    );
    cases.push({
      name: `${options.label}: renew, ${holders} holder(s)`,
      unit: "ops/s",
      work: per * holders,
      subject: {
        label: "LeaseEngine",
        run: loop(async (h) => {
          leases[h] = await engine.renew(leases[h] as (typeof leases)[number]);
        }),
      },
      baseline,
    });
  }
  return cases;
}
