import { AgentComputerError, parseInput } from "@agent-computer/core";
import type { CommitExpectation, StateStore, VersionedRecord } from "@agent-computer/leases";
import { checkCommit } from "@agent-computer/leases";
import pg from "pg";
import { z } from "zod";
import type { PostgresStateStoreOptions } from "./postgres-state-store-options.js";

const optionsSchema = z
  .object({
    pool: z.instanceof(pg.Pool).optional(),
    connectionString: z.string().min(1).optional(),
    poolConfig: z.record(z.string(), z.unknown()).optional(),
    table: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, "a lower-case SQL identifier")
      .default("agent_computer_state"),
  })
  .refine((o) => (o.pool === undefined) !== (o.connectionString === undefined), {
    message: "give exactly one of pool or connectionString",
    path: ["pool"],
  });

/** SQLSTATEs after which the transaction did not apply: a lost race, not an outage. */
const SERIALIZATION_FAILURES = new Set(["40001", "40P01"]);

/**
 * The state store on PostgreSQL, for several hosts. Each commit is one
 * SERIALIZABLE transaction of conditional `UPDATE ... RETURNING` and
 * `INSERT ... ON CONFLICT DO NOTHING RETURNING` statements, so a guard on a
 * key that does not exist yet holds against a concurrent insert too. No
 * advisory locks: they vanish silently on reconnect and break behind
 * transaction-mode poolers. The clock is the database's.
 *
 * Call `migrate()` once before first use (and after upgrading this package).
 */
export class PostgresStateStore implements StateStore {
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly table: string;

  constructor(options: PostgresStateStoreOptions) {
    const parsed = parseInput(optionsSchema, options, "PostgresStateStoreOptions");
    this.table = parsed.table;
    this.ownsPool = parsed.pool === undefined;
    this.pool = parsed.pool ?? new pg.Pool({ ...options.poolConfig, connectionString: parsed.connectionString });
    // An idle client losing its connection must not crash the process.
    this.pool.on("error", () => {});
  }

  /** Creates or upgrades the table. Safe to run from several hosts at once. */
  async migrate(): Promise<void> {
    await this.withClient(async (client) => {
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (
           key TEXT PRIMARY KEY,
           version BIGINT NOT NULL CHECK (version >= 1),
           value TEXT NOT NULL
         )`,
        // TEXT, not JSONB: JSONB refuses \u0000 and reorders keys; the port promises exact round trips.
      );
    });
  }

  async read(keys: readonly string[]): Promise<Map<string, VersionedRecord>> {
    parseInput(z.array(z.string()), keys, "StateStore.read keys");
    const out = new Map<string, VersionedRecord>();
    if (keys.length === 0) return out;
    const result = await this.withClient((client) =>
      client.query<{ key: string; version: string; value: string }>(
        `SELECT key, version, value FROM ${this.table} WHERE key = ANY($1::text[])`,
        [keys],
      ),
    );
    for (const row of result.rows)
      out.set(row.key, { key: row.key, version: Number(row.version), value: JSON.parse(row.value) });
    return out;
  }

  async commit(expect: readonly CommitExpectation[], write: readonly VersionedRecord[]): Promise<boolean> {
    checkCommit(expect, write);
    const written = new Map(write.map((r) => [r.key, r]));
    return this.withClient(async (client) => {
      await client.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
      try {
        // Rows are locked in key order, so two commits never wait on each other in a cycle.
        for (const e of [...expect].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
          const record = written.get(e.key);
          const held = record ? await this.writeIf(client, e, record) : await this.matches(client, e);
          if (!held) {
            await client.query("ROLLBACK");
            return false;
          }
        }
        // Only a COMMIT that returned counts: a connection lost here is UNAVAILABLE, never true.
        await client.query("COMMIT");
        return true;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        if (SERIALIZATION_FAILURES.has((error as { code?: string }).code ?? "")) return false;
        throw error;
      }
    });
  }

  /** The server's clock, read in a round trip of its own (see POSTGRES_CLOCK_TOLERANCE_MS). */
  async now(): Promise<number> {
    const result = await this.withClient((client) =>
      client.query<{ ms: string }>("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms"),
    );
    return Number(result.rows[0]?.ms);
  }

  /** Ends the pool when the store made it. */
  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  private async writeIf(client: pg.PoolClient, e: CommitExpectation, r: VersionedRecord): Promise<boolean> {
    const value = JSON.stringify(r.value);
    const result =
      e.version === null
        ? await client.query(
            `INSERT INTO ${this.table} (key, version, value) VALUES ($1, $2, $3)
             ON CONFLICT (key) DO NOTHING RETURNING key`,
            [r.key, r.version, value],
          )
        : await client.query(
            `UPDATE ${this.table} SET version = $2, value = $3 WHERE key = $1 AND version = $4 RETURNING key`,
            [r.key, r.version, value, e.version],
          );
    return result.rowCount === 1;
  }

  private async matches(client: pg.PoolClient, e: CommitExpectation): Promise<boolean> {
    // FOR SHARE keeps the row as read until this transaction ends;
    // SERIALIZABLE covers a key that does not exist yet.
    const result = await client.query<{ version: string }>(
      `SELECT version FROM ${this.table} WHERE key = $1 FOR SHARE`,
      [e.key],
    );
    const version = result.rows[0] === undefined ? null : Number(result.rows[0].version);
    return version === e.version;
  }

  private async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw unavailable(error);
    }
    let broken = false;
    // A connection that dies while checked out emits "error" on the client;
    // unheard, that would crash the process. The failing query reports it.
    const onError = () => {
      broken = true;
    };
    client.on("error", onError);
    try {
      return await work(client);
    } catch (error) {
      broken ||= !("code" in (error as object)) || String((error as { code?: string }).code).startsWith("57");
      if (AgentComputerError.is(error)) throw error;
      throw unavailable(error);
    } finally {
      client.off("error", onError);
      // A client whose connection failed must not go back to the pool.
      client.release(broken);
    }
  }
}

function unavailable(error: unknown): AgentComputerError {
  const code = (error as { code?: string }).code;
  // Never the message: it can hold the connection string's host or user.
  return new AgentComputerError(
    "UNAVAILABLE",
    `The PostgreSQL state store is unreachable or failed${code ? ` (${code})` : ""}; try again.`,
    { cause: error },
  );
}
