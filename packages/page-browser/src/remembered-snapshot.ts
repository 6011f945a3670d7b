/**
 * What `PageSession` keeps of the latest snapshot so `act` can check a ref:
 * the handle of each element and what the model was told it is.
 */
export interface RememberedSnapshot<Handle> {
  readonly snapshotNumber: number;
  readonly documentKey: string;
  /** The next fresh ref number; refs are never reused for another element in the same tab. */
  readonly nextRef: number;
  readonly entries: readonly { ref: string; handle: Handle; identity: string | number; role: string; name: string }[];
}
