import type { RememberedSnapshot } from "./remembered-snapshot.js";
import type { SnapshotMemory } from "./snapshot-memory.js";

/** The latest snapshot kept in process, for browsers that live in this process. */
export class InMemorySnapshotMemory<Handle> implements SnapshotMemory<Handle> {
  private latest: RememberedSnapshot<Handle> | undefined;

  async load(): Promise<RememberedSnapshot<Handle> | undefined> {
    return this.latest;
  }

  async save(snapshot: RememberedSnapshot<Handle>): Promise<void> {
    this.latest = snapshot;
  }
}
