import { checkCommit } from "./check-commit.js";
import type { CommitExpectation } from "./commit-expectation.js";
import type { MemoryStateStoreOptions } from "./memory-state-store-options.js";
import type { StateStore } from "./state-store.js";
import type { VersionedRecord } from "./versioned-record.js";

/**
 * A `StateStore` in this process's memory: one process, gone on exit. For
 * tests, the quickstart and single-process apps; several processes need the
 * SQLite store, several hosts the PostgreSQL one.
 */
export class MemoryStateStore implements StateStore {
  // Values are kept as JSON text, as a SQL store keeps them: every read
  // hands out a fresh copy, and only what survives JSON is ever stored.
  private readonly records = new Map<string, { version: number; json: string }>();
  private readonly clock: () => number;

  constructor(options: MemoryStateStoreOptions = {}) {
    this.clock = options.clock ?? (() => performance.timeOrigin + performance.now());
  }

  async read(keys: readonly string[]): Promise<Map<string, VersionedRecord>> {
    const out = new Map<string, VersionedRecord>();
    for (const key of keys) {
      const record = this.records.get(key);
      if (record) out.set(key, { key, version: record.version, value: JSON.parse(record.json) });
    }
    return out;
  }

  async commit(expect: readonly CommitExpectation[], write: readonly VersionedRecord[]): Promise<boolean> {
    checkCommit(expect, write);
    // No await between the check and the writes: that is the atomicity.
    for (const e of expect) {
      if ((this.records.get(e.key)?.version ?? null) !== e.version) return false;
    }
    const encoded = write.map((r) => [r.key, { version: r.version, json: JSON.stringify(r.value) }] as const);
    for (const [key, record] of encoded) this.records.set(key, record);
    return true;
  }

  async now(): Promise<number> {
    return this.clock();
  }
}
