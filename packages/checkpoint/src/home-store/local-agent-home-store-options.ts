import type { RestoreLimits } from "../codec/restore-limits.js";

/** Options of `LocalAgentHomeStore`. */
export interface LocalAgentHomeStoreOptions {
  /** DATA_DIR: homes live in `homes/<home-key>`, metadata in `home-revisions/<home-key>.json`. */
  dataDir: string;
  /** Bounds applied when a checkpoint is taken from a machine or a folder (defaults: `DEFAULT_RESTORE_LIMITS`). */
  limits?: RestoreLimits;
}
