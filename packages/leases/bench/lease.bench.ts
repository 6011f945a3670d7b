// `npm run bench -- lease`: lease-engine throughput on the memory store
// beside a bare Map compare-and-set loop doing the same number of
// compare-and-sets with the same concurrency, in the same run. The ratio is
// the engine's cost (validation, copies, the store's three awaits per
// decision) over the cheapest possible CAS in this process.
import type { BenchCase } from "@agent-computer/testing/bench";
import { benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { LeaseEngine } from "../src/lease-engine.js";
import { MemoryStateStore } from "../src/memory-state-store.js";

const OPS_PER_RUN = 4000;
const TTL_MS = 60_000;

/**
 * The baseline: versioned entries in a Map behind the same shape of calls a
 * store gets (read, then compare-and-set, each behind an await), retried
 * when the version moved.
 */
function bareMap() {
  const map = new Map<string, { version: number; holder: string | null }>();
  return async (key: string, holder: string | null) => {
    for (;;) {
      const expected = (await Promise.resolve(map.get(key)))?.version ?? 0;
      await undefined;
      if ((map.get(key)?.version ?? 0) !== expected) continue;
      map.set(key, { version: expected + 1, holder });
      return;
    }
  };
}

function holdersLoop(holders: number, perHolder: (holder: number) => Promise<void>) {
  return () => Promise.all(Array.from({ length: holders }, (_, h) => perHolder(h)));
}

const cases: BenchCase[] = [];
for (const holders of [1, 8, 32]) {
  const per = Math.floor(OPS_PER_RUN / holders);
  const work = per * holders;

  const acquireEngine = new LeaseEngine(new MemoryStateStore());
  const acquireMap = bareMap();
  cases.push({
    name: `acquire+release, ${holders} concurrent holder(s)`,
    unit: "ops/s",
    work,
    subject: {
      label: "LeaseEngine on MemoryStateStore",
      run: holdersLoop(holders, async (h) => {
        for (let i = 0; i < per; i++) {
          const lease = await acquireEngine.acquire({ key: `bench-${h}`, holder: `holder-${h}`, ttlMs: TTL_MS });
          await acquireEngine.release(lease);
        }
      }),
    },
    baseline: {
      label: "bare Map CAS (2 per op)",
      run: holdersLoop(holders, async (h) => {
        for (let i = 0; i < per; i++) {
          await acquireMap(`bench-${h}`, `holder-${h}`);
          await acquireMap(`bench-${h}`, null);
        }
      }),
    },
  });

  const renewEngine = new LeaseEngine(new MemoryStateStore());
  const leases = await Promise.all(
    Array.from({ length: holders }, (_, h) =>
      renewEngine.acquire({ key: `renew-${h}`, holder: `holder-${h}`, ttlMs: TTL_MS }),
    ),
  );
  const renewMap = bareMap();
  cases.push({
    name: `renew, ${holders} concurrent holder(s)`,
    unit: "ops/s",
    work,
    subject: {
      label: "LeaseEngine on MemoryStateStore",
      run: holdersLoop(holders, async (h) => {
        for (let i = 0; i < per; i++) leases[h] = await renewEngine.renew(leases[h] as (typeof leases)[number]);
      }),
    },
    baseline: {
      label: "bare Map CAS (1 per op)",
      run: holdersLoop(holders, async (h) => {
        for (let i = 0; i < per; i++) await renewMap(`renew-${h}`, `holder-${h}`);
      }),
    },
  });
}

await runBench("lease engine, memory store", cases, benchOptionsFromArgv());
