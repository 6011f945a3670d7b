import type { Pool, PoolConfig } from "pg";

/** Options of `PostgresStateStore`: a pool of yours, or settings to make one. */
export interface PostgresStateStoreOptions {
  /** A pool the app owns; `close()` then leaves it open. */
  pool?: Pool;
  /** A connection string such as `postgres://user:password@host/db`; never logged. */
  connectionString?: string;
  /** More pool settings when the store makes the pool. */
  poolConfig?: Omit<PoolConfig, "connectionString">;
  /** The table name (default `agent_computer_state`), for several deployments in one database. */
  table?: string;
}
