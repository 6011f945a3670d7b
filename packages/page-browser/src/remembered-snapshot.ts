/**
 * What `PageSession` keeps of the latest snapshot so `act` can check a ref
 * and the next snapshot can be a delta: the handle of each element, what the
 * model was told it is, and hashes (never values) of element states and of
 * text lines.
 */
export interface RememberedSnapshot<Handle> {
  readonly snapshotNumber: number;
  readonly documentKey: string;
  /** The next fresh ref number; refs are never reused for another element in the same tab. */
  readonly nextRef: number;
  /** Which part of the page it read: "" for the top, else the continuation it started from. */
  readonly window?: string;
  /** Hashes of its text lines, to send only new lines in a delta. */
  readonly lineHashes?: readonly number[];
  /** Fields of this document filled from a named secret: their value is never shown again. */
  readonly secretFields?: readonly { identity: string | number; name: string }[];
  readonly entries: readonly {
    ref: string;
    handle: Handle;
    identity: string | number;
    role: string;
    name: string;
    /** A hash of what was shown for it (role, name, value, states). */
    shown?: number;
  }[];
}
