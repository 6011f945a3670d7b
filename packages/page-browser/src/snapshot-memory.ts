import type { RememberedSnapshot } from "./remembered-snapshot.js";

/**
 * Where the latest snapshot is kept between calls: in memory for the
 * emulator, in a file for the in-computer helper (one process per call).
 */
export interface SnapshotMemory<Handle> {
  load(): Promise<RememberedSnapshot<Handle> | undefined>;
  save(snapshot: RememberedSnapshot<Handle>): Promise<void>;
}
