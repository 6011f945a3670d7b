import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";

/**
 * For tests: an engine whose store clock and client monotonic clock are two
 * manual dials, so a test can move either one alone.
 */
export function manualEngine(options: { interruptAfterMs?: number } = {}) {
  const time = { store: 1_700_000_000_000, client: 50_000 };
  const store = new MemoryStateStore({ clock: () => time.store });
  const engine = new LeaseEngine(store, { monotonicNow: () => time.client, ...options });
  const advance = (ms: number) => {
    time.store += ms;
    time.client += ms;
  };
  return { engine, store, time, advance };
}
