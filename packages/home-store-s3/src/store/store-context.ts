import type { HomeSource, RestoreLimits } from "@agent-computer/checkpoint";
import type { OpContext } from "@agent-computer/core";
import type { HomeStoreStage } from "../home-store-stage.js";
import type { HomeCache } from "./home-cache.js";
import type { HomeKeys } from "./home-keys.js";
import type { StoreBucket } from "./store-bucket.js";

/** The settings of `ObjectAgentHomeStore`, defaults applied (object-agent-home-store-options.ts says what each does). */
export interface StoreSettings {
  readonly limits: RestoreLimits;
  readonly partBytes: number;
  readonly partConcurrency: number;
  readonly abandonAfterMs: number;
  readonly chunkConcurrency: number;
  readonly chunkGraceMs: number;
}

/**
 * What the store's parts (checkpoint writers, restores, browse, reconcile)
 * share: the bucket, the local cache, the records and keys, the settings,
 * and the progress callback.
 */
export interface StoreContext {
  readonly bucket: StoreBucket;
  readonly cache: HomeCache;
  readonly keys: HomeKeys;
  readonly settings: StoreSettings;
  emit(event: HomeStoreStage): Promise<void>;
}

/** One checkpoint to take: the validated request of `ObjectAgentHomeStore.checkpoint`. */
export interface CheckpointJob {
  readonly homeKey: string;
  readonly source: HomeSource;
  readonly commit: ((next: number, attempt?: string) => Promise<void>) | undefined;
  readonly ctx: OpContext;
}
