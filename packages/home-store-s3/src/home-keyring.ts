/**
 * Wraps and unwraps homes' data keys with the space's content key. The
 * content key never leaves the keyring: `ContentKeyring` holds it in memory
 * (from bytes or an environment variable); a KMS implements the same two
 * calls with its own wrap and unwrap.
 */
export interface HomeKeyring {
  /** Wraps a 32-byte data key for the home `storageId`; the result is bound to it. */
  wrap(dataKey: Uint8Array, storageId: string): Promise<string>;
  /**
   * The data key inside `wrapped`. CHECKPOINT_CORRUPT when it was wrapped by
   * another space's content key, for another home, or was altered.
   */
  unwrap(wrapped: string, storageId: string): Promise<Uint8Array>;
}
