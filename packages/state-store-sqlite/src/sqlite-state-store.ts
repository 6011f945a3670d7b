import { AgentComputerError, parseInput } from "@agent-computer/core";
import type { CommitExpectation, StateStore, VersionedRecord } from "@agent-computer/leases";
import { checkCommit } from "@agent-computer/leases";
import Database from "better-sqlite3";
import { z } from "zod";
import type { SqliteStateStoreOptions } from "./sqlite-state-store-options.js";

const optionsSchema = z.object({
  path: z.string().min(1),
  busyTimeoutMs: z.number().int().min(0).max(600_000).default(5000),
});

/** Schema versions, applied in order by `open`. Never edit one that shipped. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE agent_computer_state (
     key TEXT PRIMARY KEY NOT NULL,
     version INTEGER NOT NULL CHECK (version >= 1),
     value TEXT NOT NULL
   ) STRICT`,
];

/**
 * The state store on one SQLite file, shared by several processes of one
 * host. Each commit is one `BEGIN IMMEDIATE` transaction in WAL mode: the
 * write lock is taken before anything is read, so a compare-and-set can
 * never interleave with another process's. A commit that cannot get the lock
 * within `busyTimeoutMs` throws UNAVAILABLE and has written nothing; it is
 * never reported as a lost race or a success.
 */
export class SqliteStateStore implements StateStore {
  private constructor(private readonly db: Database.Database) {}

  /** Opens (creating when missing) the file and applies pending migrations. */
  static open(options: SqliteStateStoreOptions): SqliteStateStore {
    const { path, busyTimeoutMs } = parseInput(optionsSchema, options, "SqliteStateStoreOptions");
    const db = guard(() => new Database(path, { timeout: busyTimeoutMs }));
    guard(() => {
      db.pragma("journal_mode = WAL");
      // FULL: a commit that returned is on disk, also after a power cut.
      db.pragma("synchronous = FULL");
      migrate(db);
    });
    return new SqliteStateStore(db);
  }

  async read(keys: readonly string[]): Promise<Map<string, VersionedRecord>> {
    parseInput(z.array(z.string()), keys, "StateStore.read keys");
    const out = new Map<string, VersionedRecord>();
    if (keys.length === 0) return out;
    // One statement, so the records come from one snapshot.
    const rows = guard(() =>
      this.db
        .prepare(`SELECT key, version, value FROM agent_computer_state WHERE key IN (SELECT value FROM json_each(?))`)
        .all(JSON.stringify(keys)),
    ) as { key: string; version: number; value: string }[];
    for (const row of rows) out.set(row.key, { key: row.key, version: row.version, value: JSON.parse(row.value) });
    return out;
  }

  async commit(expect: readonly CommitExpectation[], write: readonly VersionedRecord[]): Promise<boolean> {
    checkCommit(expect, write);
    const versionOf = this.db.prepare("SELECT version FROM agent_computer_state WHERE key = ?").pluck();
    const upsert = this.db.prepare(
      `INSERT INTO agent_computer_state (key, version, value) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET version = excluded.version, value = excluded.value`,
    );
    const apply = this.db.transaction(() => {
      for (const e of expect) {
        if (((versionOf.get(e.key) as number | undefined) ?? null) !== e.version) return false;
      }
      for (const r of write) upsert.run(r.key, r.version, JSON.stringify(r.value));
      return true;
    });
    return guard(() => apply.immediate());
  }

  async now(): Promise<number> {
    // The host's clock, read through SQLite: every process of the host shares it.
    return guard(() => this.db.prepare("SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)").pluck().get() as number);
  }

  /** Closes the file; the store cannot be used afterwards. */
  close(): void {
    this.db.close();
  }
}

function migrate(db: Database.Database): void {
  // Read without the write lock first: opening a store must not wait on
  // (or fail behind) another process's commit when nothing is to migrate.
  if ((db.pragma("user_version", { simple: true }) as number) >= MIGRATIONS.length) return;
  db.transaction(() => {
    const current = db.pragma("user_version", { simple: true }) as number;
    for (let v = current; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v] as string);
    if (current < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/** Maps SQLite failures to typed errors; a busy database is retryable. */
function guard<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (AgentComputerError.is(error)) throw error;
    const code = (error as { code?: string }).code ?? "";
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
      throw new AgentComputerError("UNAVAILABLE", "The SQLite state store is busy with another process; try again.", {
        cause: error,
      });
    }
    throw new AgentComputerError("UNAVAILABLE", `The SQLite state store failed: ${code || (error as Error).message}`, {
      cause: error,
    });
  }
}
