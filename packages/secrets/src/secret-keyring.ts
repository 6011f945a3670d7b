/**
 * What seals a secret's data key: the same two calls as a home's keyring
 * (`HomeKeyring` of `@agent-computer/home-store-s3`, whose `ContentKeyring`
 * holds the space's content key, or a KMS), so a space's secrets and its
 * checkpoints hang off one content key.
 */
export interface SecretKeyring {
  /** Wraps a 32-byte data key, bound to `storageId`. */
  wrap(dataKey: Uint8Array, storageId: string): Promise<string>;
  /** The data key inside `wrapped`; throws when it was wrapped for another id, by another key, or altered. */
  unwrap(wrapped: string, storageId: string): Promise<Uint8Array>;
}
