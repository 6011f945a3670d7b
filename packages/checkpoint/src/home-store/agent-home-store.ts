import type { HomeCheckpoint } from "./home-checkpoint.js";
import type { HomeCheckpointRequest } from "./home-checkpoint-request.js";
import type { HomeRestoreRequest } from "./home-restore-request.js";
import type { StoredHomeEntry, StoredHomeFile, StoredHomeRange } from "./stored-home-entry.js";

/**
 * Where homes survive their computers: the local store keeps the latest copy
 * on this host, the S3 store in a bucket. Latest-only: a checkpoint replaces
 * the previous one whole, and revisions only grow.
 */
export interface AgentHomeStore {
  /**
   * Saves the home from `source` as the next revision. Serialised per home:
   * a second call waits for the first. A failed or refused checkpoint
   * (including a throwing `commit` hook) leaves the previous one as it was.
   */
  checkpoint(request: HomeCheckpointRequest): Promise<HomeCheckpoint>;
  /**
   * Restores the latest checkpoint into `target`, replacing what is there
   * whole. Resolves undefined, touching nothing, when the home has none.
   */
  restore(request: HomeRestoreRequest): Promise<HomeCheckpoint | undefined>;
  /** The latest checkpoint's metadata, or undefined when there is none. */
  latest(homeKey: string): Promise<HomeCheckpoint | undefined>;
  /** Removes the home's saved copy. Its revision counter is kept, so revisions still only grow. */
  delete(homeKey: string): Promise<void>;
  /**
   * Lists one folder (home-relative, `""` for the top) of the latest stored
   * revision without restoring the home. Links are listed, never followed.
   * Throws `NOT_FOUND` when the home has no checkpoint or the folder is not
   * in it, `INVALID_ARGUMENT` for a path outside the home.
   */
  list(homeKey: string, dir: string): Promise<StoredHomeEntry[]>;
  /**
   * Reads one regular file (or `range` of it) of the latest stored revision
   * without restoring the home. A link is never followed (`INVALID_ARGUMENT`);
   * tampered stored bytes are `CHECKPOINT_CORRUPT`, never wrong bytes.
   */
  read(homeKey: string, path: string, options?: { range?: StoredHomeRange }): Promise<StoredHomeFile>;
}
