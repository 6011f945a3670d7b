import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import {
  type AgentHomeStore,
  homeCheckpointRequestSchema as checkpointRequestSchema,
  type HomeCheckpoint,
  type HomeCheckpointRequest,
  type HomeRestoreRequest,
  type HomeSource,
  type HomeTarget,
  homeKeySchema,
  packHome,
  recoverInterruptedRestore,
  restoreHome,
  homeRestoreRequestSchema as restoreRequestSchema,
  type StoredHomeEntry,
  type StoredHomeFile,
  type StoredHomeRange,
} from "@agent-computer/checkpoint";
import { AgentComputerError, checkOpContext, type OpContext, parseInput, throwIfDone } from "@agent-computer/core";
import { S3Client } from "@aws-sdk/client-s3";
import PQueue from "p-queue";
import { z } from "zod";
import { signDeletedPointer } from "./committed-pointer.js";
import type { HomeReconcileResult } from "./home-reconcile-result.js";
import type { HomeStoreStage } from "./home-store-stage.js";
import type { ObjectAgentHomeStoreOptions } from "./object-agent-home-store-options.js";
import { takeArchiveCheckpoint } from "./store/archive-checkpoint.js";
import { takeChunkedCheckpoint } from "./store/chunked-checkpoint.js";
import { HomeCache, publicOf } from "./store/home-cache.js";
import { checkedStorageId, HomeKeys } from "./store/home-keys.js";
import { reconcileHomes } from "./store/reconcile-homes.js";
import { COMMITTED, StoreBucket } from "./store/store-bucket.js";
import type { StoreContext } from "./store/store-context.js";
import { storeOptionsSchema, withIdleTimeout } from "./store/store-options-schema.js";
import { StoredHomeBrowser } from "./store/stored-home-browser.js";
import { syncCache } from "./store/sync-cache.js";

const MIB = 1024 * 1024;

/**
 * A home store whose source of truth is an S3-compatible bucket (docs/architecture.md §8).
 *
 * A checkpoint checks the home into a staging folder of the cache, writes
 * what the bucket lacks under `homes/<storage-id>/` (sealed under the
 * home's data key), then the revision's object at
 * `homes/<storage-id>/<revision>/<attempt>`; then the commit hook (the
 * fenced compare-and-set on the computer record) decides; then the winner
 * writes `homes/<storage-id>/<revision>/committed` naming its attempt and
 * deletes older objects. Each attempt has a fresh random id, so a retry or a
 * paused worker's late upload never overwrites an object: only the commit
 * decides which one is current. `DATA_DIR/homes/<home-key>` is a cache,
 * brought up to the committed revision before every read.
 *
 * The parts live in ./store: the bucket layer (store-bucket.ts,
 * multipart-upload.ts), the checkpoint writers (chunked-checkpoint.ts,
 * archive-checkpoint.ts for format 1), the restore (sync-cache.ts,
 * chunked-restore.ts), browsing (stored-home-browser.ts) and the
 * reconciler (reconcile-homes.ts).
 */
export class ObjectAgentHomeStore implements AgentHomeStore {
  /** Absolute DATA_DIR. */
  readonly dataDir: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly format: 1 | 2;
  /** The one client every bucket call goes through (tests count its requests). */
  private readonly s3: S3Client;
  private readonly store: StoreContext;
  private readonly browser: StoredHomeBrowser;
  private readonly queues = new Map<string, PQueue>();

  constructor(options: ObjectAgentHomeStoreOptions) {
    const parsed = parseInput(storeOptionsSchema, options, "ObjectAgentHomeStoreOptions");
    this.s3 = options.s3 instanceof S3Client ? options.s3 : new S3Client(withIdleTimeout(options.s3));
    this.bucket = parsed.bucket;
    this.prefix = parsed.prefix ?? "";
    this.dataDir = resolve(parsed.dataDir);
    // Format 2 is the one format written; 1 only where a test or the bench asks for what older releases wrote.
    this.format = parsed.format ?? 2;
    const onStage = options.onStage;
    this.store = {
      bucket: new StoreBucket(this.s3, this.bucket, this.prefix),
      cache: new HomeCache(this.dataDir),
      keys: new HomeKeys(options.records, options.keyring),
      settings: {
        limits: parsed.limits ?? {},
        partBytes: parsed.partBytes ?? 8 * MIB,
        partConcurrency: parsed.partConcurrency ?? 4,
        abandonAfterMs: parsed.abandonAfterMs ?? 60 * 60 * 1000,
        chunkConcurrency: parsed.chunkConcurrency ?? 8,
        chunkGraceMs: parsed.chunkGraceMs ?? 60 * 60 * 1000,
      },
      emit: async (event: HomeStoreStage) => {
        await onStage?.(event);
      },
    };
    this.browser = new StoredHomeBrowser(this.store);
  }

  /** The cache folder of a home (what a mounted-home provider mounts). */
  homeDir(homeKey: string): string {
    return this.store.cache.homeDir(homeKey);
  }

  checkpoint(request: HomeCheckpointRequest): Promise<HomeCheckpoint> {
    const parsed = parseInput(checkpointRequestSchema, request, "HomeCheckpointRequest");
    const ctx = checkOpContext(parsed.ctx);
    const take = this.format === 2 ? takeChunkedCheckpoint : takeArchiveCheckpoint;
    const job = { homeKey: parsed.homeKey, source: parsed.source as HomeSource, commit: parsed.commit, ctx };
    return this.serially(parsed.homeKey, () => take(this.store, job));
  }

  restore(request: HomeRestoreRequest): Promise<HomeCheckpoint | undefined> {
    const parsed = parseInput(restoreRequestSchema, request, "HomeRestoreRequest");
    const ctx = checkOpContext(parsed.ctx);
    return this.serially(parsed.homeKey, () => this.restoreLatest(parsed.homeKey, parsed.target as HomeTarget, ctx));
  }

  /** Brings the cache up to the committed revision first, so this may download the home. */
  latest(homeKey: string): Promise<HomeCheckpoint | undefined> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    return this.serially(key, async () => publicOf(await syncCache(this.store, key, {})));
  }

  /**
   * Lists a folder of the committed revision without restoring it: a
   * chunked revision from its manifest (one download, then kept in memory
   * for that revision), a format-1 one by a streamed scan of its archive
   * (the codec's listArchivedFolder: the whole object is read and
   * authenticated, nothing is written; README "Browsing").
   */
  list(homeKey: string, dir: string): Promise<StoredHomeEntry[]> {
    return this.browser.list(homeKey, dir);
  }

  /**
   * Reads a file (or a range) of the committed revision: on a chunked
   * revision only the chunks that hold it, each authenticated; on format 1
   * a streamed scan of the archive that stops once the range was read (each
   * segment authenticated before its bytes are used).
   */
  read(homeKey: string, path: string, options?: { range?: StoredHomeRange }): Promise<StoredHomeFile> {
    return this.browser.read(homeKey, path, options?.range);
  }

  /**
   * Deletes every object of the home and its cache. The revision stays on the
   * computer record, so the next checkpoint continues the count.
   */
  delete(homeKey: string): Promise<void> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    const { bucket, cache, keys } = this.store;
    return this.serially(key, async () => {
      const record = await keys.records.read(key);
      if (record !== undefined) {
        const storageId = checkedStorageId(record);
        const { revisions, chunked } = await bucket.listAll(`${bucket.homesPrefix()}${storageId}/`);
        await bucket.deleteKeys([...chunked.map((o) => o.key), ...revisions.map((o) => o.key)]);
        // The record keeps its revision, so a restore would find it committed with no objects: say, under the
        // home's key, that they went on purpose (else that is CHECKPOINT_CORRUPT, never "no checkpoint").
        if (record.revision > 0 && record.wrappedDataKey !== undefined)
          await bucket.put(
            bucket.objectKey(storageId, record.revision, COMMITTED),
            signDeletedPointer(await keys.dataKeyOf(record), storageId, record.revision),
          );
      }
      await rm(cache.homeDir(key), { recursive: true, force: true });
      await recoverInterruptedRestore(cache.homeDir(key));
      // The chunk index would claim the deleted chunks are stored: the next checkpoint must upload them.
      await cache.forget(key);
      if (record !== undefined) this.browser.forget(record.storageId);
    });
  }

  /**
   * Deletes what no live home needs (reconcile-homes.ts): objects of deleted
   * computers, superseded and abandoned revisions, and chunks no manifest
   * references after their grace period. Never an object of a committed
   * revision's winner. With `dryRun`, only reports.
   */
  reconcile(options: { dryRun?: boolean } = {}): Promise<HomeReconcileResult> {
    const { dryRun = false } = parseInput(
      z.object({ dryRun: z.boolean().optional() }).strict(),
      options,
      "reconcile options",
    );
    return reconcileHomes(this.store, dryRun);
  }

  private async restoreLatest(
    homeKey: string,
    target: HomeTarget,
    ctx: OpContext,
  ): Promise<HomeCheckpoint | undefined> {
    throwIfDone(ctx, "restore");
    const latest = await syncCache(this.store, homeKey, ctx);
    if (latest === undefined) return undefined;
    const home = this.homeDir(homeKey);
    // A mounted home already is the cache folder, now at the committed revision.
    if ("mounted" in target) return publicOf(latest);
    if ("dir" in target) {
      if (resolve(target.dir) === home)
        throw new AgentComputerError("INVALID_ARGUMENT", "The target folder is the store's own copy of the home.");
      await restoreHome(packHome(home).tar, target.dir, this.store.settings.limits);
    } else await target.machine.files.importWorkspace(packHome(home).tar, ctx);
    return publicOf(latest);
  }

  private serially<T>(homeKey: string, work: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(homeKey);
    if (queue === undefined) {
      queue = new PQueue({ concurrency: 1 });
      this.queues.set(homeKey, queue);
    }
    return queue.add(work) as Promise<T>;
  }
}
