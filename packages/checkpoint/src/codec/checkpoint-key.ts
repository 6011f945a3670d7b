/**
 * What a sealed checkpoint is bound to. The same three values must be given
 * to open it; any other home, revision or key fails with CHECKPOINT_CORRUPT.
 */
export interface CheckpointKey {
  /** The home's 32-byte data key (AES-256). Kept wrapped beside the computer record. */
  dataKey: Uint8Array;
  /** The home's storage id: a checkpoint of another home does not open. */
  storageId: string;
  /** The revision this checkpoint is: an older or newer one does not open in its place. */
  revision: number;
}
