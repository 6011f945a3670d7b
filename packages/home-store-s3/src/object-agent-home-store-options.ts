import type { RestoreLimits } from "@agent-computer/checkpoint";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import type { HomeKeyring } from "./home-keyring.js";
import type { HomeRecords } from "./home-records.js";
import type { HomeStoreStage } from "./home-store-stage.js";

/** Options of `ObjectAgentHomeStore`. */
export interface ObjectAgentHomeStoreOptions {
  /** A client to share, or the config to make one (region, endpoint, credentials, `forcePathStyle`). */
  s3: S3Client | S3ClientConfig;
  bucket: string;
  /** Prepended to every key, e.g. `"space-1/"`: empty or segments ending in `/`. Default empty. */
  prefix?: string;
  /** DATA_DIR: the cache of each home in `homes/<home-key>`, its revision in `home-revisions/<home-key>.json`. */
  dataDir: string;
  /** Wraps the homes' data keys with the space's content key. */
  keyring: HomeKeyring;
  /** Where the storage id, revision and wrapped data key of each home live (the computer records). */
  records: HomeRecords;
  /** Bounds checked on every archive written into the cache (defaults: core's `DEFAULT_RESTORE_LIMITS`). */
  limits?: RestoreLimits;
  /**
   * Format 1 only (`format: 1`): bytes per uploaded part (default 8 MiB). S3
   * needs at least 5 MiB for all but the last part; memory held by such a
   * checkpoint is about `partBytes` x (`partConcurrency` + 1).
   */
  partBytes?: number;
  /** Format 1 only: parts in flight at once (default 4). */
  partConcurrency?: number;
  /**
   * How old an object of a revision above the committed one must be before
   * the reconciler treats it as abandoned (default one hour). It may still
   * be a checkpoint between upload and commit, so keep this above the
   * longest upload.
   */
  abandonAfterMs?: number;
  /**
   * Leave unset: every checkpoint writes format 2, content chunks named by
   * an HMAC of their bytes, only the ones the bucket lacks uploaded, and a
   * sealed manifest per revision (README "Format 2"). `1` writes the
   * retired format, the whole home as one sealed archive, as older releases
   * did: only for tests of the migration and the benchmark's baseline. Both
   * are always read, and a home's next checkpoint without the option
   * migrates it.
   */
  format?: 1 | 2;
  /**
   * Chunk objects (1 MiB chunks, packs of about 4 MiB) uploaded at once, as
   * many waiting (default 8); a restore fetches twice as many chunks, and
   * as many packs, ahead.
   */
  chunkConcurrency?: number;
  /**
   * How long a chunk stays marked unreferenced before the
   * reconciler deletes it (default one hour, at least 100 ms). A checkpoint
   * must write its manifest within half of it after listing the chunks, or
   * it fails UNAVAILABLE (README "Garbage collection").
   */
  chunkGraceMs?: number;
  /**
   * Called at each stage, and awaited: a slow callback slows the checkpoint.
   * Never given keys or credentials.
   */
  onStage?: (event: HomeStoreStage) => void | Promise<void>;
}
