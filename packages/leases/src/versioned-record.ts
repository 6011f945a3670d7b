/**
 * One record of a `StateStore`. The store keeps `value` as JSON and never
 * interprets it; only the lease engine knows what leases and computer
 * records look like.
 */
export interface VersionedRecord {
  /** Unique within the store; any non-empty string up to 1024 characters. */
  readonly key: string;
  /**
   * Starts at 1 and grows by one with every write of the key. A 64-bit
   * integer in SQL stores: tokens and versions only ever grow, for years.
   */
  readonly version: number;
  /** A JSON object: the store must give back exactly what was written. */
  readonly value: Readonly<Record<string, unknown>>;
}
