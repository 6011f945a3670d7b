/** Options of `SqliteStateStore.open`. */
export interface SqliteStateStoreOptions {
  /** The database file. Every process that shares leases opens the same file. */
  path: string;
  /**
   * How long a commit waits for another process's write transaction before
   * giving up with UNAVAILABLE (default 5000 ms). The wait blocks this
   * process's event loop: better-sqlite3 is synchronous.
   */
  busyTimeoutMs?: number;
}
