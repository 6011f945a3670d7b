import type { HomeCheckpoint } from "./home-checkpoint.js";
import type { HomeCheckpointRequest } from "./home-checkpoint-request.js";
import type { HomeRestoreRequest } from "./home-restore-request.js";

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
}
