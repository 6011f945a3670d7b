import type { ComputerOwner } from "./computer-owner.js";
import type { ComputerScope } from "./computer-scope.js";

/**
 * What the state store keeps per computer (docs/architecture.md §6), beside its leases so
 * that a fenced revision advance is one atomic commit.
 */
export interface ComputerRecord {
  readonly computerId: string;
  /** The provider kind that made `providerRef` ("docker", "kubernetes", ...). */
  readonly providerKind: string;
  /** `<kind>:<id>` of the current machine, or null when none is provisioned. An acceleration path, never durable data. */
  readonly providerRef: string | null;
  /** Which home (workspace) the computer works on. */
  readonly homeKey: string;
  /** Binds sealed checkpoints to this home: splicing between homes fails to open. */
  readonly storageId: string;
  /** The home's checkpoint revision; advances only through `commitRevision`. */
  readonly revision: number;
  /**
   * The attempt (a store's name for one upload of a revision) that won
   * `revision`'s fenced commit, when the store named one: a store that keeps
   * several attempts of a revision restores this one and no other (issue
   * 45, finding 9). Absent for revisions committed without one.
   */
  readonly committedAttempt?: string;
  /**
   * Team or private (and then whose). Optional so records written before it
   * existed still parse: read it with `scopeOf`, which says what they mean.
   */
  readonly scope?: ComputerScope;
  /** Whom its running time is attributed to (user and space); absent when the app gave none. */
  readonly owner?: ComputerOwner;
  /** The home's data key, wrapped by the space's content key; deleting the record makes checkpoints unreadable. */
  readonly wrappedDataKey?: string;
  /** Each stretch the computer ran, oldest first. */
  readonly runs: readonly {
    readonly runId: string;
    readonly startedAt: number;
    readonly endedAt?: number;
    readonly endReason?: "stopped" | "idle" | "active_limit" | "replaced" | "gone" | "deleted" | "reconciled";
  }[];
  /** The store record's version: pass it to `updateComputer` and `deleteComputer` as `expectedVersion`. */
  readonly version: number;
}
