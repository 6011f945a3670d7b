import { readFileSync } from "node:fs";
import type { StateStore } from "@agent-computer/leases";
import { PostgresStateStore } from "@agent-computer/state-store-postgres";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";

/** Which shared store the paused-worker test runs on, and where it is. */
export interface PausedWorkerStore {
  readonly kind: "sqlite" | "postgres";
  /** The SQLite file, or the PostgreSQL URL. */
  readonly location: string;
  /** A file holding the milliseconds every process adds to the store's clock (the ten minutes of a pause, at once). */
  readonly skewFile: string;
}

/**
 * The shared store as every process of the test sees it: the real store,
 * its clock read through the skew file, so the parent can make ten minutes
 * pass for everyone while the worker is paused.
 */
export async function openPausedWorkerStore(
  spec: PausedWorkerStore,
): Promise<{ readonly store: StateStore; close(): Promise<void> }> {
  let inner: StateStore & { close(): unknown };
  if (spec.kind === "sqlite") {
    inner = SqliteStateStore.open({ path: spec.location });
  } else {
    const postgres = new PostgresStateStore({ connectionString: spec.location });
    await postgres.migrate();
    inner = postgres;
  }
  const skew = () => Number(readFileSync(spec.skewFile, "utf8") || "0");
  return {
    store: {
      read: (keys) => inner.read(keys),
      commit: (expect, write) => inner.commit(expect, write),
      now: async () => (await inner.now()) + skew(),
    },
    close: async () => {
      await inner.close();
    },
  };
}
