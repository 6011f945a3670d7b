import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { PassThrough, type Readable } from "node:stream";
import {
  type AgentHomeStore,
  homeCheckpointRequestSchema as checkpointRequestSchema,
  type HomeCheckpoint,
  type HomeCheckpointRequest,
  type HomeRestoreRequest,
  type HomeSource,
  type HomeTarget,
  homeKeySchema,
  listArchivedFolder,
  openCheckpoint,
  packHome,
  type RestoreLimits,
  readArchivedFile,
  recoverInterruptedRestore,
  restoreHome,
  restoreLimitsSchema,
  homeRestoreRequestSchema as restoreRequestSchema,
  type StagedHome,
  type StoredHomeEntry,
  type StoredHomeFile,
  type StoredHomeRange,
  sealCheckpoint,
  stageHome,
} from "@agent-computer/checkpoint";
import {
  AgentComputerError,
  checkOpContext,
  type OpContext,
  parseInput,
  signalOf,
  throwIfDone,
} from "@agent-computer/core";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import PQueue from "p-queue";
import { z } from "zod";
import { readCappedObject } from "./capped-object-read.js";
import { ChunkBucket, type ListedObject } from "./chunked/chunk-bucket.js";
import { collectChunks } from "./chunked/chunk-collection.js";
import { type ChunkKeys, chunkKeysOf } from "./chunked/chunk-keys.js";
import type { HomeManifest } from "./chunked/home-manifest.js";
import { type ChunkPlace, readPlace, snapshotHome } from "./chunked/home-snapshot.js";
import { manifestArchive } from "./chunked/manifest-archive.js";
import { listManifest, planRead } from "./chunked/manifest-browser.js";
import { isChunk } from "./chunked/sealed-chunk.js";
import { isManifest, MAX_MANIFEST_BYTES, openManifest, sealManifest } from "./chunked/sealed-manifest.js";
import {
  forgedPointerError,
  MAX_POINTER_BYTES,
  signDeletedPointer,
  signPointer,
  verifyPointer,
} from "./committed-pointer.js";
import { deleteBucketKeys } from "./delete-bucket-keys.js";
import type { HomeKeyring } from "./home-keyring.js";
import type { HomeReconcileResult } from "./home-reconcile-result.js";
import type { HomeRecord } from "./home-record.js";
import type { HomeRecords } from "./home-records.js";
import type { HomeStoreStage } from "./home-store-stage.js";
import type { ObjectAgentHomeStoreOptions } from "./object-agent-home-store-options.js";
import { manifestTooLarge, missingRevision } from "./stored-revision-errors.js";

const MIB = 1024 * 1024;
/** A clean-up request after a failure (aborting an upload) gets this long of its own. */
const CLEAN_UP_TIMEOUT_MS = 10_000;
/**
 * How long a bucket request's socket may sit idle before the SDK gives it up
 * and retries, for clients the store builds from a config: the SDK's own
 * default is no limit (its requestTimeout only logs a warning), so one
 * stalled connection would hold a checkpoint until its deadline, or forever.
 */
const IDLE_SOCKET_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** Names the pointer object that says which attempt won a revision. */
const COMMITTED = "committed";

// A storage id becomes a segment of object keys: the same alphabet, nothing that could climb out.
const storageIdPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const optionsSchema = z
  .object({
    s3: z.custom<S3Client | object>((v) => typeof v === "object" && v !== null, {
      message: "expected an S3Client or an S3ClientConfig",
    }),
    bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "a bucket name (3 to 63 of a-z, 0-9, '.', '-')"),
    prefix: z
      .string()
      .regex(/^([A-Za-z0-9._-]+\/)*$/, "empty, or segments of letters, digits, '.', '_', '-' each ending in '/'")
      .refine((v) => !v.split("/").some((segment) => segment === "." || segment === ".."), {
        message: "no '.' or '..' segments",
      })
      .optional(),
    dataDir: z.string().min(1),
    keyring: z.custom<HomeKeyring>(
      (v) => typeof (v as HomeKeyring)?.wrap === "function" && typeof (v as HomeKeyring)?.unwrap === "function",
      { message: "expected a HomeKeyring with wrap and unwrap" },
    ),
    records: z.custom<HomeRecords>(
      (v) =>
        typeof (v as HomeRecords)?.read === "function" &&
        typeof (v as HomeRecords)?.setWrappedDataKey === "function" &&
        typeof (v as HomeRecords)?.advanceRevision === "function" &&
        typeof (v as HomeRecords)?.list === "function",
      { message: "expected HomeRecords with read, setWrappedDataKey, advanceRevision and list" },
    ),
    limits: restoreLimitsSchema.optional(),
    // S3 itself needs 5 MiB parts; smaller ones are for servers without that rule (tests).
    partBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(5 * 1024 * MIB)
      .optional(),
    partConcurrency: z.number().int().min(1).max(64).optional(),
    abandonAfterMs: z.number().int().nonnegative().optional(),
    format: z.union([z.literal(1), z.literal(2)]).optional(),
    chunkConcurrency: z.number().int().min(1).max(64).optional(),
    chunkGraceMs: z.number().int().min(100).optional(),
    onStage: z.custom<(event: HomeStoreStage) => void>((v) => typeof v === "function").optional(),
  })
  .strict();

/** The cache's marker: which stored revision `DATA_DIR/homes/<home-key>` holds. */
interface CacheMarker extends HomeCheckpoint {
  readonly storageId: string;
}

/** A format-1 revision to browse by a streamed scan of its sealed archive. */
interface ArchiveToScan {
  readonly objectKey: string;
  readonly dataKey: Uint8Array;
  readonly storageId: string;
  readonly revision: number;
}

/** One object under `homes/`, as the key names it. */
interface StoredObject {
  readonly key: string;
  readonly storageId: string;
  readonly revision: number;
  /** The attempt id, or "committed" for a revision's pointer. */
  readonly name: string;
  readonly lastModified: number;
  /** Bytes, as the listing states them. */
  readonly size: number;
}

/** A chunk or deletion mark of a format-v2 home, as the key names it. */
interface ChunkedObject extends ListedObject {
  readonly storageId: string;
  readonly kind: "chunk" | "mark";
}

/**
 * A home store whose source of truth is an S3-compatible bucket (docs/architecture.md §8).
 *
 * A checkpoint packs the home, checks it into a staging folder of the cache
 * while sealing it (64 KiB AES-256-GCM segments bound to the storage id and
 * revision) under the home's data key and streaming it as a multipart upload
 * to `homes/<storage-id>/<revision>/<attempt>`; then the commit hook (the
 * fenced compare-and-set on the computer record) decides; then the winner
 * writes `homes/<storage-id>/<revision>/committed` naming its attempt and
 * deletes older objects. Each attempt has a fresh random id, so a retry or a
 * paused worker's late upload never overwrites an object: only the commit
 * decides which one is current. `DATA_DIR/homes/<home-key>` is a cache,
 * brought up to the committed revision before every read.
 */
export class ObjectAgentHomeStore implements AgentHomeStore {
  /** Absolute DATA_DIR. */
  readonly dataDir: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly s3: S3Client;
  private readonly keyring: HomeKeyring;
  private readonly records: HomeRecords;
  private readonly limits: RestoreLimits;
  private readonly partBytes: number;
  private readonly partConcurrency: number;
  private readonly abandonAfterMs: number;
  private readonly format: 1 | 2;
  private readonly chunkConcurrency: number;
  private readonly chunkGraceMs: number;
  private readonly onStage: ((event: HomeStoreStage) => void | Promise<void>) | undefined;
  private readonly queues = new Map<string, PQueue>();
  private readonly browsed = new Map<string, { manifest: HomeManifest; keys: ChunkKeys }>();

  constructor(options: ObjectAgentHomeStoreOptions) {
    const parsed = parseInput(optionsSchema, options, "ObjectAgentHomeStoreOptions");
    this.s3 = options.s3 instanceof S3Client ? options.s3 : new S3Client(withIdleTimeout(options.s3));
    this.bucket = parsed.bucket;
    this.prefix = parsed.prefix ?? "";
    this.dataDir = resolve(parsed.dataDir);
    this.keyring = options.keyring;
    this.records = options.records;
    this.limits = parsed.limits ?? {};
    this.partBytes = parsed.partBytes ?? 8 * MIB;
    this.partConcurrency = parsed.partConcurrency ?? 4;
    this.abandonAfterMs = parsed.abandonAfterMs ?? 60 * 60 * 1000;
    this.format = parsed.format ?? 1;
    this.chunkConcurrency = parsed.chunkConcurrency ?? 8;
    this.chunkGraceMs = parsed.chunkGraceMs ?? 60 * 60 * 1000;
    this.onStage = options.onStage;
  }

  /** The cache folder of a home (what a mounted-home provider mounts). */
  homeDir(homeKey: string): string {
    return join(this.dataDir, "homes", parseInput(homeKeySchema, homeKey, "home key"));
  }

  checkpoint(request: HomeCheckpointRequest): Promise<HomeCheckpoint> {
    const parsed = parseInput(checkpointRequestSchema, request, "HomeCheckpointRequest");
    const ctx = checkOpContext(parsed.ctx);
    const take = this.format === 2 ? this.takeChunkedCheckpoint : this.takeCheckpoint;
    return this.serially(parsed.homeKey, () =>
      take.call(this, parsed.homeKey, parsed.source as HomeSource, parsed.commit, ctx),
    );
  }

  restore(request: HomeRestoreRequest): Promise<HomeCheckpoint | undefined> {
    const parsed = parseInput(restoreRequestSchema, request, "HomeRestoreRequest");
    const ctx = checkOpContext(parsed.ctx);
    return this.serially(parsed.homeKey, () => this.restoreLatest(parsed.homeKey, parsed.target as HomeTarget, ctx));
  }

  /** Brings the cache up to the committed revision first, so this may download the home. */
  latest(homeKey: string): Promise<HomeCheckpoint | undefined> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    return this.serially(key, async () => publicOf(await this.syncCache(key, {})));
  }

  /**
   * Deletes every object of the home and its cache. The revision stays on the
   * computer record, so the next checkpoint continues the count.
   */
  /**
   * Lists a folder of the committed revision without restoring it: a
   * format-2 revision from its manifest (one download, then kept in memory
   * for that revision), a format-1 one by a streamed scan of its archive
   * (the codec's listArchivedFolder: the whole object is read and
   * authenticated, nothing is written; README "Browsing").
   */
  async list(homeKey: string, dir: string): Promise<StoredHomeEntry[]> {
    const browsed = await this.browsedManifest(homeKey);
    if ("archive" in browsed) return listArchivedFolder(await this.openArchive(browsed.archive), dir);
    return listManifest(browsed.manifest, dir);
  }

  /**
   * Reads a file (or a range) of the committed revision: on format 2 only
   * the chunks that hold it, each authenticated; on format 1 a streamed
   * scan of the archive that stops once the range was read (each segment
   * authenticated before its bytes are used).
   */
  async read(homeKey: string, path: string, options?: { range?: StoredHomeRange }): Promise<StoredHomeFile> {
    const browsed = await this.browsedManifest(homeKey);
    if ("archive" in browsed) {
      const file = await readArchivedFile(await this.openArchive(browsed.archive), path, options?.range);
      return { path: file.path, size: file.size, revision: browsed.archive.revision, bytes: file.bytes };
    }
    const { manifest, keys } = browsed;
    const plan = planRead(manifest, path, options?.range);
    const bucket = this.chunkBucket(keys.storageId);
    const signal = new AbortController().signal;
    const pieces = await Promise.all(
      plan.chunks.map(async (chunk) => {
        const plain = await bucket.fetch(keys, chunk.name, chunk.size, signal);
        return plain.subarray(Math.max(plan.start - chunk.offset, 0), Math.min(plan.end - chunk.offset, chunk.size));
      }),
    );
    return { path: plan.entry.path, size: plan.entry.size, revision: manifest.revision, bytes: Buffer.concat(pieces) };
  }

  /** The committed revision's checked manifest; a small per-store memory of the last ones opened. */
  private async browsedManifest(
    homeKey: string,
  ): Promise<{ manifest: HomeManifest; keys: ChunkKeys } | { archive: ArchiveToScan }> {
    const record = await this.recordOf(parseInput(homeKeySchema, homeKey, "home key"));
    if (record.revision === 0) throw new AgentComputerError("NOT_FOUND", `Home "${homeKey}" has no checkpoint yet.`);
    const storageId = checkedStorageId(record);
    const remembered = this.browsed.get(storageId);
    if (remembered?.manifest.revision === record.revision) return remembered;
    const dataKey = await this.dataKeyOf(record);
    const object = await this.currentObject(storageId, record.revision, dataKey);
    if (object === undefined) throw new AgentComputerError("NOT_FOUND", `Home "${homeKey}" has no checkpoint yet.`);
    if (!isManifest(await this.getBytes(object.key, "bytes=0-7")))
      return { archive: { objectKey: object.key, dataKey, storageId, revision: record.revision } };
    const keys = chunkKeysOf(dataKey, storageId);
    const { manifest } = openManifest(keys, record.revision, await this.getBytes(object.key), this.limits);
    if (this.browsed.size >= 16) this.browsed.delete(this.browsed.keys().next().value as string);
    this.browsed.set(storageId, { manifest, keys });
    return { manifest, keys };
  }

  /** A format-1 revision's archive, opened (each segment authenticated before it is handed on). */
  private async openArchive(archive: ArchiveToScan): Promise<Readable> {
    const body = await this.get(archive.objectKey, new AbortController().signal);
    return openCheckpoint(body, { dataKey: archive.dataKey, storageId: archive.storageId, revision: archive.revision });
  }

  delete(homeKey: string): Promise<void> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    return this.serially(key, async () => {
      const record = await this.records.read(key);
      if (record !== undefined) {
        const storageId = checkedStorageId(record);
        const { revisions, chunked } = await this.listAll(`${this.homesPrefix()}${storageId}/`);
        await this.deleteKeys([...chunked.map((o) => o.key), ...revisions.map((o) => o.key)]);
        // The record keeps its revision, so a restore would find it committed with no objects: say, under the
        // home's key, that they went on purpose (else that is CHECKPOINT_CORRUPT, never "no checkpoint").
        if (record.revision > 0 && record.wrappedDataKey !== undefined)
          await this.put(
            this.objectKey(storageId, record.revision, COMMITTED),
            signDeletedPointer(await this.dataKeyOf(record), storageId, record.revision),
          );
      }
      await rm(this.homeDir(key), { recursive: true, force: true });
      await recoverInterruptedRestore(this.homeDir(key));
      await rm(this.markerPath(key), { force: true });
      // The index would claim the deleted chunks are stored: the next checkpoint must upload them.
      await rm(this.chunkIndexPath(key), { force: true });
      if (record !== undefined) this.browsed.delete(record.storageId);
    });
  }

  /**
   * Deletes what no live home needs: objects of storage ids no computer owns
   * (deleted computers), revisions below a home's committed one (left by a
   * crash between commit and clean-up), attempts that lost the committed
   * revision, and attempts above it older than `abandonAfterMs` (a crash
   * before commit). Never an object of a committed revision's winner. With
   * `dryRun`, only reports.
   */
  async reconcile(options: { dryRun?: boolean } = {}): Promise<HomeReconcileResult> {
    const { dryRun = false } = parseInput(
      z.object({ dryRun: z.boolean().optional() }).strict(),
      options,
      "reconcile options",
    );
    // Records first, objects second: an object uploaded after this listing is younger than any grace period.
    const owners = new Map<string, HomeRecord>();
    for await (const record of this.records.list()) {
      if (storageIdPattern.test(record.storageId)) owners.set(record.storageId, record);
    }
    // Taken before any manifest is listed: the chunk rule (chunk-collection.ts) depends on it.
    const startedAt = Date.now();
    const { revisions: objects, chunked } = await this.listAll(this.homesPrefix());
    const now = Date.now();
    const winners = new Map<string, string>();
    const listed = new Set(objects.map((o) => o.key));
    for (const o of objects) {
      const owner = owners.get(o.storageId);
      if (owner !== undefined && o.revision === owner.revision && o.name === COMMITTED) {
        const attempt = await this.signedWinner(owner, o);
        // A pointer naming no listed attempt (empty, torn, or written by hand) names no winner: deleting
        // every other candidate on its word would delete the committed revision itself. Nor does one that
        // does not authenticate (flipped to a loser, issue 45, finding 9): it would delete the winner.
        const named = attempt !== undefined && listed.has(this.objectKey(o.storageId, o.revision, attempt));
        if (named) winners.set(o.storageId, attempt);
      }
    }
    const removed: { key: string; reason: "unowned" | "superseded" | "abandoned" }[] = [];
    const kept: string[] = [];
    for (const o of objects) {
      const owner = owners.get(o.storageId);
      if (owner === undefined) removed.push({ key: o.key, reason: "unowned" });
      else if (o.revision < owner.revision) removed.push({ key: o.key, reason: "superseded" });
      else if (o.revision === owner.revision) {
        const winner = winners.get(o.storageId);
        // Without a pointer the winner is unknown: keep every candidate of the committed revision.
        if (winner !== undefined && o.name !== COMMITTED && o.name !== winner)
          removed.push({ key: o.key, reason: "superseded" });
        else kept.push(o.key);
      } else if (now - o.lastModified >= this.abandonAfterMs) removed.push({ key: o.key, reason: "abandoned" });
      else kept.push(o.key);
    }
    const chunkRemoved = await this.collectUnreferencedChunks(owners, objects, chunked, removed, startedAt, dryRun);
    if (!dryRun) {
      await this.deleteKeys(removed.map((r) => r.key));
      await this.abortAbandonedUploads(now);
    }
    return { dryRun, examined: objects.length + chunked.length, removed: [...chunkRemoved, ...removed], kept };
  }

  private async takeCheckpoint(
    homeKey: string,
    source: HomeSource,
    commit: ((next: number) => Promise<void>) | undefined,
    ctx: OpContext,
  ): Promise<HomeCheckpoint> {
    throwIfDone(ctx, "checkpoint");
    const record = await this.recordOf(homeKey);
    const storageId = checkedStorageId(record);
    const dataKey = await this.dataKeyOf(record);
    const next = record.revision + 1;
    const attempt = randomBytes(12).toString("hex");
    const objectKey = this.objectKey(storageId, next, attempt);
    const home = this.homeDir(homeKey);
    await recoverInterruptedRestore(home);
    await this.emit({ stage: "packing", homeKey, revision: next });

    const signal = signalOf(ctx, "checkpoint");
    let resume: (() => Promise<void>) | undefined;
    let tar: AsyncIterable<Uint8Array> & { destroy(error?: Error): void };
    let packStats: Promise<{ files: number; bytes: number }> | undefined;
    if ("machine" in source) {
      // Browsers rewrite their profiles while they run; pause them for a consistent export.
      resume = await source.machine.quiesceDesktops?.(ctx);
      try {
        tar = await source.machine.files.exportWorkspace(ctx);
      } catch (error) {
        await resume?.();
        throw error;
      }
    } else {
      const dir = "mounted" in source ? home : source.dir;
      if ("dir" in source && resolve(source.dir) === home)
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          `The source folder is the store's own copy of "${homeKey}"; use { mounted: true } for a mounted home.`,
        );
      if ("mounted" in source) await mkdir(home, { recursive: true });
      const packed = packHome(dir);
      tar = packed.tar;
      packStats = packed.stats;
    }

    // Stopping the archive early (a failed upload, an abort) must not become an uncaught 'error' event when
    // the staging has not started reading it yet; the reader still sees the error.
    (tar as unknown as Partial<Readable>).on?.("error", () => {});
    const hash = createHash("sha256");
    // The sealer reads from `sealed`; the cache's staging (when there is one) drives the archive.
    const plain = new PassThrough({ highWaterMark: MIB });
    const sealed = sealCheckpoint(plain, { dataKey, storageId, revision: next });
    const onAbort = () => {
      tar.destroy(signal.reason as Error);
      sealed.destroy(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    let staged: StagedHome | undefined;
    let uploadedBytes: number;
    let feeding: Promise<StagedHome | undefined> | undefined;
    try {
      const uploading = this.upload(objectKey, sealed, homeKey, next, signal);
      // A mounted home is the cache itself: nothing to stage, its pack stats describe it.
      feeding =
        "mounted" in source
          ? feed(tar, plain, hash).then(() => undefined)
          : stageHome(teeInto(tar, plain, hash), home, this.limits);
      const [stagedResult, bytes] = await Promise.all([
        feeding.catch((error: unknown) => {
          sealed.destroy(error as Error);
          throw error;
        }),
        uploading.catch((error: unknown) => {
          tar.destroy(error as Error);
          plain.destroy(error as Error);
          throw error;
        }),
      ]);
      staged = stagedResult;
      uploadedBytes = bytes;
    } catch (error) {
      // A failed upload rejects first while the staging may still finish: wait for it and discard
      // what it staged, or the cache stays claimed and every later checkpoint is CONFLICT.
      staged ??= await feeding?.catch(() => undefined);
      await staged?.discard();
      throw error;
    } finally {
      signal.removeEventListener("abort", onAbort);
      await resume?.();
    }
    await this.emit({ stage: "uploaded", homeKey, revision: next, objectKey, bytes: uploadedBytes });

    try {
      throwIfDone(ctx, "checkpoint");
      await this.emit({ stage: "committing", homeKey, revision: next });
      if (commit) await commit(next);
      else await this.records.advanceRevision({ homeKey, expectedRevision: record.revision, next });
    } catch (error) {
      // The fence said no (or the caller gave up): this attempt's object is nobody's.
      await staged?.discard();
      await this.deleteKeys([objectKey]).catch(() => {});
      throw error;
    }

    await this.emit({ stage: "cleaning-up", homeKey, revision: next });
    // Only the winner of `next` gets here, so only it writes the pointer.
    // Best effort from here on: the revision is committed, and a reader without the pointer takes the only candidate.
    await this.put(this.objectKey(storageId, next, COMMITTED), signPointer(dataKey, storageId, next, attempt)).catch(
      () => {},
    );
    const stats = staged ? staged.stats : await (packStats as Promise<{ files: number; bytes: number }>);
    const checkpoint: CacheMarker = {
      homeKey,
      storageId,
      revision: next,
      createdAt: Date.now(),
      bytes: stats.bytes,
      files: stats.files,
      digest: `sha256:${hash.digest("hex")}`,
      mounted: "mounted" in source,
    };
    if (staged) await staged.swapIn();
    await this.writeMarker(checkpoint);
    // Older revisions and losing attempts of this one; a failure here leaves work for the reconciler, not a wrong
    // home, and must not report the committed checkpoint as failed (the fault storm found both listing and deleting fail).
    await this.listObjects(`${this.homesPrefix()}${storageId}/`)
      .then((objects) =>
        this.deleteKeys(
          objects
            .filter((o) => o.revision < next || (o.revision === next && o.name !== attempt && o.name !== COMMITTED))
            .map((o) => o.key),
        ),
      )
      .catch(() => {});
    return publicOf(checkpoint) as HomeCheckpoint;
  }

  private async restoreLatest(
    homeKey: string,
    target: HomeTarget,
    ctx: OpContext,
  ): Promise<HomeCheckpoint | undefined> {
    throwIfDone(ctx, "restore");
    const latest = await this.syncCache(homeKey, ctx);
    if (latest === undefined) return undefined;
    const home = this.homeDir(homeKey);
    // A mounted home already is the cache folder, now at the committed revision.
    if ("mounted" in target) return publicOf(latest);
    if ("dir" in target) {
      if (resolve(target.dir) === home)
        throw new AgentComputerError("INVALID_ARGUMENT", "The target folder is the store's own copy of the home.");
      await restoreHome(packHome(home).tar, target.dir, this.limits);
    } else await target.machine.files.importWorkspace(packHome(home).tar, ctx);
    return publicOf(latest);
  }

  /**
   * Makes `DATA_DIR/homes/<home-key>` the committed revision: a no-op when
   * the marker already says so, else a download, opened and checked into a
   * staging folder and swapped in whole (the previous cache stays on any
   * failure). Undefined when the home has no checkpoint (or it was deleted).
   */
  private async syncCache(homeKey: string, ctx: OpContext): Promise<CacheMarker | undefined> {
    const record = await this.recordOf(homeKey);
    if (record.revision === 0) return undefined;
    const storageId = checkedStorageId(record);
    const home = this.homeDir(homeKey);
    await recoverInterruptedRestore(home);
    const marker = await this.readMarker(homeKey);
    if (marker?.storageId === storageId && marker.revision === record.revision) return marker;
    const dataKey = await this.dataKeyOf(record);
    const object = await this.currentObject(storageId, record.revision, dataKey);
    if (object === undefined) return undefined;
    await this.emit({ stage: "downloading", homeKey, revision: record.revision, objectKey: object.key });
    const signal = signalOf(ctx, "restore");
    const body = await this.get(object.key, signal);
    const { head, stream } = await peekStart(body, 8);
    if (isManifest(head)) {
      // By the listed size, before the body is read (issue 45, finding 7).
      if (object.size > MAX_MANIFEST_BYTES) {
        body.destroy();
        throw manifestTooLarge(object.size);
      }
      const sealed = await collectBytes(stream, MAX_MANIFEST_BYTES);
      return this.syncChunked(homeKey, storageId, record.revision, dataKey, sealed, object.lastModified, signal);
    }
    const hash = createHash("sha256");
    const stats = await restoreHome(
      tap(openCheckpoint(stream, { dataKey, storageId, revision: record.revision }), hash),
      home,
      this.limits,
    );
    const synced: CacheMarker = {
      homeKey,
      storageId,
      revision: record.revision,
      createdAt: object.lastModified,
      bytes: stats.bytes,
      files: stats.files,
      digest: `sha256:${hash.digest("hex")}`,
      mounted: false,
    };
    await this.writeMarker(synced);
    return synced;
  }

  /**
   * The committed revision's object: the attempt a signed pointer names, else
   * (no pointer, or an unsigned one from before pointers were signed) the
   * only candidate. Undefined only when `delete` said, under the home's key,
   * that the copy is gone. A committed revision whose objects are missing,
   * or whose pointer names a missing attempt or does not authenticate, is
   * CHECKPOINT_CORRUPT: answering "no checkpoint" there made the runtime
   * start an empty home and commit it (issue 45, finding 5).
   */
  private async currentObject(
    storageId: string,
    revision: number,
    dataKey: Uint8Array,
  ): Promise<StoredObject | undefined> {
    const candidates = await this.listObjects(`${this.homesPrefix()}${storageId}/${revision}/`);
    const attempts = candidates.filter((o) => o.name !== COMMITTED && o.revision === revision);
    const pointer = candidates.find((o) => o.name === COMMITTED);
    const text = pointer === undefined ? undefined : await this.readPointer(pointer.key);
    const reading = text === undefined ? undefined : verifyPointer(dataKey, storageId, revision, text);
    if (reading !== undefined && "forged" in reading) throw forgedPointerError(storageId, revision);
    if (reading !== undefined && "deleted" in reading && attempts.length === 0) return undefined;
    if (reading !== undefined && "attempt" in reading) {
      const found = attempts.find((o) => o.name === reading.attempt);
      if (found) return found;
      throw missingRevision(
        storageId,
        revision,
        `the attempt its committed pointer names (${reading.attempt}) is missing`,
      );
    }
    if (attempts.length === 1) return attempts[0];
    if (attempts.length === 0) throw missingRevision(storageId, revision, "the bucket holds no object of it");
    // Only a losing writer that crashed after a winner that crashed before its pointer leaves this.
    throw new AgentComputerError(
      "CHECKPOINT_CORRUPT",
      `Revision ${revision} of home storage "${storageId}" has ${attempts.length} candidate objects and no committed pointer; ` +
        "delete the ones that are not current (see the README, 'Object layout').",
      { details: { storageId, revision, candidates: attempts.map((o) => o.key) } },
    );
  }

  /**
   * A format-v2 checkpoint (README "Format v2"): the home is checked into a
   * staging folder of the cache as in v1, then cut into chunks named by
   * their HMAC; only chunks the bucket lacks are sealed and uploaded, then
   * the sealed manifest goes where v1 puts the archive
   * (`homes/<storage-id>/<revision>/<attempt>`), so the fenced commit,
   * pointer and clean-up are v1's.
   */
  private async takeChunkedCheckpoint(
    homeKey: string,
    source: HomeSource,
    commit: ((next: number) => Promise<void>) | undefined,
    ctx: OpContext,
  ): Promise<HomeCheckpoint> {
    throwIfDone(ctx, "checkpoint");
    const record = await this.recordOf(homeKey);
    const storageId = checkedStorageId(record);
    const dataKey = await this.dataKeyOf(record);
    const keys = chunkKeysOf(dataKey, storageId);
    const next = record.revision + 1;
    const attempt = randomBytes(12).toString("hex");
    const objectKey = this.objectKey(storageId, next, attempt);
    await recoverInterruptedRestore(this.homeDir(homeKey));
    await this.emit({ stage: "packing", homeKey, revision: next });
    const { staged, swap } = await this.stageSource(homeKey, source, ctx);
    let snapshot: ReturnType<typeof snapshotHome>;
    let digest: string;
    try {
      snapshot = snapshotHome(staged.stagingDir, keys);
      const manifest: HomeManifest = { format: 2, storageId, revision: next, entries: snapshot.entries };
      const sealed = sealManifest(keys, manifest);
      digest = sealed.digest;
      const committed = await this.readChunkIndex(homeKey, storageId, record.revision);
      const signal = signalOf(ctx, "checkpoint");
      const bytes = await this.uploadMissingChunks(
        keys,
        staged.stagingDir,
        snapshot.places,
        committed,
        homeKey,
        next,
        signal,
      );
      await this.putBytes(objectKey, sealed.sealed, "writing a manifest", signal);
      await this.emit({ stage: "uploaded", homeKey, revision: next, objectKey, bytes: bytes + sealed.sealed.length });
      throwIfDone(ctx, "checkpoint");
      await this.emit({ stage: "committing", homeKey, revision: next });
      if (commit) await commit(next);
      else await this.records.advanceRevision({ homeKey, expectedRevision: record.revision, next });
    } catch (error) {
      await staged.discard();
      await this.deleteKeys([objectKey]).catch(() => {});
      throw error;
    }
    await this.emit({ stage: "cleaning-up", homeKey, revision: next });
    await this.put(this.objectKey(storageId, next, COMMITTED), signPointer(dataKey, storageId, next, attempt)).catch(
      () => {},
    );
    const checkpoint: CacheMarker = {
      homeKey,
      storageId,
      revision: next,
      createdAt: Date.now(),
      bytes: staged.stats.bytes,
      files: staged.stats.files,
      digest,
      mounted: "mounted" in source,
    };
    if (swap) await staged.swapIn();
    else await staged.discard();
    await this.writeChunkIndex(homeKey, storageId, next, snapshot.places);
    await this.writeMarker(checkpoint);
    // Chunks stay: the reconciler removes the unreferenced ones under its grace rule (chunk-collection.ts).
    // Best effort, as in v1: a committed checkpoint is never reported failed for its clean-up.
    await this.deleteLeftovers(storageId, [record.revision, next], next, attempt).catch(() => {});
    return publicOf(checkpoint) as HomeCheckpoint;
  }

  /**
   * Deletes the previous revision's objects and the losing attempts of `next`,
   * listing only those revisions' folders (a format-2 home's folder also
   * holds every chunk). Older leftovers of a crash are the reconciler's.
   */
  private async deleteLeftovers(storageId: string, revisions: number[], next: number, attempt: string): Promise<void> {
    const listed = await Promise.all(
      revisions.filter((r) => r > 0).map((r) => this.listObjects(`${this.homesPrefix()}${storageId}/${r}/`)),
    );
    const leftovers = listed
      .flat()
      .filter((o) => o.revision < next || (o.revision === next && o.name !== attempt && o.name !== COMMITTED));
    await this.deleteKeys(leftovers.map((o) => o.key));
  }

  /** Checks the source into a staging folder: beside the cache (swapped in after the commit), or, for a mounted home, a scratch one. */
  private async stageSource(
    homeKey: string,
    source: HomeSource,
    ctx: OpContext,
  ): Promise<{ staged: StagedHome; swap: boolean }> {
    const home = this.homeDir(homeKey);
    if ("machine" in source) {
      const resume = await source.machine.quiesceDesktops?.(ctx);
      try {
        const tar = await source.machine.files.exportWorkspace(ctx);
        return { staged: await stageHome(tar, home, this.limits), swap: true };
      } finally {
        await resume?.();
      }
    }
    if ("mounted" in source) {
      // The live home is the cache: read it through the packer's link-safe walk into a scratch copy.
      await mkdir(home, { recursive: true });
      await mkdir(join(this.dataDir, "home-scratch"), { recursive: true });
      const scratch = join(this.dataDir, "home-scratch", homeKey);
      return { staged: await stageHome(packHome(home).tar, scratch, this.limits), swap: false };
    }
    if (resolve(source.dir) === home)
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `The source folder is the store's own copy of "${homeKey}"; use { mounted: true } for a mounted home.`,
      );
    return { staged: await stageHome(packHome(source.dir).tar, home, this.limits), swap: true };
  }

  /**
   * Uploads the chunks the bucket does not hold. Chunks a deletion mark
   * names count as absent and go up again, and the manifest must follow
   * within half the grace period: the reconciler's side of that rule is in
   * chunk-collection.ts.
   */
  private async uploadMissingChunks(
    keys: ChunkKeys,
    root: string,
    places: ReadonlyMap<string, ChunkPlace>,
    committed: ReadonlyMap<string, ChunkPlace>,
    homeKey: string,
    revision: number,
    signal: AbortSignal,
  ): Promise<number> {
    const bucket = this.chunkBucket(keys.storageId);
    const listedAt = Date.now();
    // The committed revision's chunks are in the bucket (the reconciler never deletes a referenced
    // one), so with this host's index of that revision only the marks need listing; else the chunks too.
    const [stored, marks] = await Promise.all([
      committed.size > 0 ? [...committed.keys()].map((name) => ({ name })) : bucket.listChunks(),
      bucket.listMarks(),
    ]);
    const marked = new Set((await Promise.all(marks.map((m) => bucket.readMark(m)))).flat());
    const present = new Set(stored.map((o) => o.name).filter((name) => !marked.has(name)));
    const missing = new Map([...places].filter(([name]) => !present.has(name)));
    await this.emit({ stage: "uploading", homeKey, revision, part: 1, bytes: 0 });
    const bytes = await bucket.upload(keys, root, missing, this.chunkConcurrency, signal);
    if (Date.now() - listedAt >= this.chunkGraceMs / 2)
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The chunk upload took over half the chunk grace period (${this.chunkGraceMs} ms), so the reconciler may already be collecting chunks it reuses; checkpoint again (or raise chunkGraceMs).`,
      );
    return bytes;
  }

  /**
   * Brings the cache to a v2 revision: the manifest is opened and checked,
   * each chunk taken from the cache when the previous revision left it
   * there (read where the chunk index says and used only if its HMAC is the
   * chunk's name, so a changed or planted cache file is never trusted) and
   * fetched from the bucket otherwise, and the home staged and swapped in
   * whole by the codec.
   */
  private async syncChunked(
    homeKey: string,
    storageId: string,
    revision: number,
    dataKey: Uint8Array,
    sealed: Buffer,
    createdAt: number,
    signal: AbortSignal,
  ): Promise<CacheMarker> {
    const keys = chunkKeysOf(dataKey, storageId);
    const { manifest, digest } = openManifest(keys, revision, sealed, this.limits);
    const home = this.homeDir(homeKey);
    const index = await this.readChunkIndex(homeKey, storageId);
    const bucket = this.chunkBucket(storageId);
    const source = async (name: string, size: number) => {
      const place = index.get(name);
      if (place !== undefined && place.size === size) {
        const plain = readPlace(home, place);
        if (plain !== undefined && isChunk(keys, name, plain)) return plain;
      }
      return bucket.fetch(keys, name, size, signal);
    };
    const stats = await restoreHome(manifestArchive(manifest, source, this.chunkConcurrency), home, this.limits);
    await this.writeChunkIndex(homeKey, storageId, revision, placesOf(manifest));
    const synced: CacheMarker = {
      homeKey,
      storageId,
      revision,
      createdAt,
      bytes: stats.bytes,
      files: stats.files,
      digest,
      mounted: false,
    };
    await this.writeMarker(synced);
    return synced;
  }

  /**
   * The reconciler's chunk half: for each live home, chunks no listed
   * manifest (committed, or pending and kept) references are marked, and
   * deleted a grace period later (chunk-collection.ts); an unowned home's
   * chunks go at once, like its revisions. A manifest that does not open
   * stops collection for its home: better garbage than a missing chunk.
   */
  private async collectUnreferencedChunks(
    owners: ReadonlyMap<string, HomeRecord>,
    objects: readonly StoredObject[],
    chunked: readonly ChunkedObject[],
    removed: readonly { key: string }[],
    startedAt: number,
    dryRun: boolean,
  ): Promise<{ key: string; reason: "unowned" | "unreferenced" }[]> {
    const out: { key: string; reason: "unowned" | "unreferenced" }[] = [];
    const unowned = chunked.filter((o) => !owners.has(o.storageId)).map((o) => o.key);
    out.push(...unowned.map((key) => ({ key, reason: "unowned" as const })));
    if (!dryRun) await this.deleteKeys(unowned);
    const removing = new Set(removed.map((r) => r.key));
    for (const [storageId, owner] of owners) {
      const mine = chunked.filter((o) => o.storageId === storageId);
      if (mine.length === 0) continue;
      const manifests = objects.filter(
        (o) =>
          o.storageId === storageId && o.name !== COMMITTED && o.revision >= owner.revision && !removing.has(o.key),
      );
      const referenced = await this.referencedChunks(owner, manifests).catch(() => undefined);
      if (referenced === undefined) continue;
      const bucket = this.chunkBucket(storageId);
      const marks = await Promise.all(
        mine.filter((o) => o.kind === "mark").map(async (m) => ({ ...m, names: await bucket.readMark(m) })),
      );
      const plan = collectChunks({
        chunks: mine.filter((o) => o.kind === "chunk"),
        marks,
        referenced,
        now: startedAt,
        graceMs: this.chunkGraceMs,
      });
      out.push(...plan.deleteChunks.map((key) => ({ key, reason: "unreferenced" as const })));
      if (dryRun) continue;
      await bucket.deleteKeys(plan.deleteChunks);
      await bucket.deleteKeys(plan.deleteMarks);
      if (plan.mark.length > 0) await bucket.writeMark(`${Date.now()}-${randomBytes(6).toString("hex")}`, plan.mark);
    }
    return out;
  }

  /** Every chunk name the given revision objects reference (v1 archives reference none). */
  private async referencedChunks(owner: HomeRecord, manifests: readonly StoredObject[]): Promise<Set<string>> {
    const referenced = new Set<string>();
    if (manifests.length === 0) return referenced;
    const keys = chunkKeysOf(await this.dataKeyOf(owner), owner.storageId);
    for (const object of manifests) {
      const head = await this.getBytes(object.key, "bytes=0-7");
      if (!isManifest(head)) continue;
      const { manifest } = openManifest(keys, object.revision, await this.getBytes(object.key), this.limits);
      for (const entry of manifest.entries)
        if (entry.kind === "file") for (const c of entry.chunks) referenced.add(c.name);
    }
    return referenced;
  }

  private chunkBucket(storageId: string): ChunkBucket {
    return new ChunkBucket(this.s3, this.bucket, `${this.homesPrefix()}${storageId}/`, (what, send) =>
      this.call(what, send),
    );
  }

  /** A manifest (or its first bytes), refused from its Content-Length when over MAX_MANIFEST_BYTES. */
  private async getBytes(key: string, range?: string): Promise<Buffer> {
    return this.call("downloading a manifest", () =>
      readCappedObject({
        s3: this.s3,
        bucket: this.bucket,
        key,
        range,
        maxBytes: MAX_MANIFEST_BYTES,
        tooLarge: manifestTooLarge,
      }),
    );
  }

  private async putBytes(key: string, body: Buffer, what: string, signal: AbortSignal): Promise<void> {
    await this.call(what, () =>
      this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length }), {
        abortSignal: signal,
      }),
    );
  }

  private chunkIndexPath(homeKey: string): string {
    return join(this.dataDir, "home-revisions", `${homeKey}.chunks.json`);
  }

  /** Where the cache holds each chunk of the revision it last took; only a hint (restores check every byte). */
  private async readChunkIndex(
    homeKey: string,
    storageId: string,
    revision?: number,
  ): Promise<Map<string, ChunkPlace>> {
    try {
      const saved = JSON.parse(await readFile(this.chunkIndexPath(homeKey), "utf8")) as {
        storageId: string;
        revision: number;
        places: [string, string, number, number][];
      };
      if (saved.storageId !== storageId || (revision !== undefined && saved.revision !== revision)) return new Map();
      return new Map(saved.places.map(([name, path, offset, size]) => [name, { path, offset, size }]));
    } catch {
      return new Map();
    }
  }

  private async writeChunkIndex(
    homeKey: string,
    storageId: string,
    revision: number,
    places: ReadonlyMap<string, ChunkPlace>,
  ): Promise<void> {
    const path = this.chunkIndexPath(homeKey);
    await mkdir(join(this.dataDir, "home-revisions"), { recursive: true });
    const list = [...places].map(([name, p]) => [name, p.path, p.offset, p.size]);
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify({ storageId, revision, places: list }));
    await rename(temporary, path);
  }

  /** Revision objects (archives, manifests, pointers) and chunk objects (chunks, marks) under `prefix`. */
  private async listAll(prefix: string): Promise<{ revisions: StoredObject[]; chunked: ChunkedObject[] }> {
    const revisions: StoredObject[] = [];
    const chunked: ChunkedObject[] = [];
    const homes = this.homesPrefix();
    let token: string | undefined;
    do {
      const page = await this.call("listing objects", () =>
        this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token })),
      );
      for (const item of page.Contents ?? []) {
        const key = item.Key as string;
        if (!key.startsWith(homes)) continue;
        const rest = key.slice(homes.length);
        const lastModified = item.LastModified?.getTime() ?? 0;
        // Keys this store did not write are not its to delete.
        const revision = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})\/([1-9][0-9]*)\/([0-9a-f]{24}|committed)$/.exec(rest);
        if (revision !== null) {
          revisions.push({
            key,
            storageId: revision[1] as string,
            revision: Number(revision[2]),
            name: revision[3] as string,
            lastModified,
            size: item.Size ?? 0,
          });
          continue;
        }
        const chunk = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})\/(chunks|gc-marks)\/([0-9a-z-]{1,64})$/.exec(rest);
        if (chunk !== null)
          chunked.push({
            key,
            storageId: chunk[1] as string,
            kind: chunk[2] === "chunks" ? "chunk" : "mark",
            name: chunk[3] as string,
            lastModified,
          });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return { revisions, chunked };
  }

  private async recordOf(homeKey: string): Promise<HomeRecord> {
    const record = await this.records.read(homeKey);
    if (record === undefined)
      throw new AgentComputerError(
        "NOT_FOUND",
        `No computer owns home "${homeKey}" (never created, or deleted); its objects, if any, are unreadable and the reconciler removes them.`,
        { details: { homeKey } },
      );
    return record;
  }

  /** The home's data key; the first checkpoint makes one and stores it wrapped with the record. */
  private async dataKeyOf(record: HomeRecord): Promise<Uint8Array> {
    if (record.wrappedDataKey !== undefined) return this.keyring.unwrap(record.wrappedDataKey, record.storageId);
    const dataKey = randomBytes(32);
    const wrappedDataKey = await this.keyring.wrap(dataKey, record.storageId);
    try {
      await this.records.setWrappedDataKey({
        homeKey: record.homeKey,
        expectedVersion: record.version,
        wrappedDataKey,
      });
      return dataKey;
    } catch (error) {
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      // Another writer stored the first key: use theirs.
      const current = await this.recordOf(record.homeKey);
      if (current.wrappedDataKey === undefined || current.storageId !== record.storageId) throw error;
      return this.keyring.unwrap(current.wrappedDataKey, current.storageId);
    }
  }

  /**
   * Streams `body` as a multipart upload, `partConcurrency` parts in flight,
   * so memory stays near `partBytes` x (`partConcurrency` + 1) whatever the
   * home's size. On any failure the upload is aborted and no object appears.
   * `signal` (the operation's deadline or abort) ends every request of it at once.
   */
  private async upload(
    key: string,
    body: Readable,
    homeKey: string,
    revision: number,
    signal: AbortSignal,
  ): Promise<number> {
    const sent = { abortSignal: signal };
    const created = await this.call("starting an upload", () =>
      this.s3.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }), sent),
    );
    const uploadId = created.UploadId as string;
    const parts: { ETag: string; PartNumber: number }[] = [];
    const inFlight = new Set<Promise<void>>();
    let bytes = 0;
    let partNumber = 0;
    try {
      for await (const part of partsOf(body, this.partBytes)) {
        partNumber++;
        bytes += part.length;
        await this.emit({ stage: "uploading", homeKey, revision, part: partNumber, bytes });
        const number = partNumber;
        const sending: Promise<void> = this.call(`uploading part ${number}`, () =>
          this.s3.send(
            new UploadPartCommand({
              Bucket: this.bucket,
              Key: key,
              UploadId: uploadId,
              PartNumber: number,
              Body: part,
              ContentLength: part.length,
            }),
            sent,
          ),
        ).then((result) => {
          parts[number - 1] = { ETag: result.ETag as string, PartNumber: number };
          inFlight.delete(sending);
        });
        // Failures surface through Promise.race/all below; this only keeps Node from calling them unhandled.
        sending.catch(() => {});
        inFlight.add(sending);
        if (inFlight.size >= this.partConcurrency) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
      await this.call("completing an upload", () =>
        this.s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
          }),
          sent,
        ),
      );
      return bytes;
    } catch (error) {
      body.destroy();
      await Promise.allSettled(inFlight);
      // Its own bound: the operation's signal may be what ended it, and a stalled abort must not hold the error.
      await this.s3
        .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }), {
          abortSignal: AbortSignal.timeout(CLEAN_UP_TIMEOUT_MS),
        })
        .catch(() => {});
      throw error;
    }
  }

  private async get(key: string, signal: AbortSignal): Promise<Readable> {
    const result = await this.call("downloading a checkpoint", () =>
      this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal }),
    );
    return result.Body as Readable;
  }

  private async put(key: string, text: string): Promise<void> {
    await this.call("writing a revision pointer", () =>
      this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: text })),
    );
  }

  /**
   * A pointer's text, read only up to MAX_POINTER_BYTES (issue 45, finding 7); a bigger one is not one this
   * store wrote and reads as empty, which names no winner (committed-pointer.ts).
   */
  private async readPointer(key: string): Promise<string | undefined> {
    const oversized = new AgentComputerError("CHECKPOINT_CORRUPT", "A committed pointer is over its size limit.");
    try {
      const bytes = await readCappedObject({
        s3: this.s3,
        bucket: this.bucket,
        key,
        maxBytes: MAX_POINTER_BYTES,
        tooLarge: () => oversized,
      });
      return bytes.toString("utf8");
    } catch (error) {
      if (error === oversized) return "";
      if (isMissing(error)) return undefined;
      throw this.unavailable("reading a revision pointer", error);
    }
  }

  /** The attempt a reconciled home's pointer names, only when it authenticates; any doubt names none. */
  private async signedWinner(owner: HomeRecord, pointer: StoredObject): Promise<string | undefined> {
    // Reading a key must not make one (dataKeyOf does for a home without): no key, no signed pointer.
    if (owner.wrappedDataKey === undefined) return undefined;
    const text = await this.readPointer(pointer.key);
    if (text === undefined) return undefined;
    const dataKey = await this.dataKeyOf(owner).catch((error: unknown) => {
      // A key that does not unwrap leaves the winner unknown: keep every candidate.
      if (AgentComputerError.is(error, "CHECKPOINT_CORRUPT")) return undefined;
      throw error;
    });
    if (dataKey === undefined) return undefined;
    const reading = verifyPointer(dataKey, owner.storageId, pointer.revision, text);
    return "attempt" in reading ? reading.attempt : undefined;
  }

  private async listObjects(prefix: string): Promise<StoredObject[]> {
    return (await this.listAll(prefix)).revisions;
  }

  private deleteKeys(keys: readonly string[]): Promise<void> {
    return deleteBucketKeys(this.s3, this.bucket, keys, (what, send) => this.call(what, send), "objects");
  }

  /** Multipart uploads left by a killed checkpoint hold storage until aborted; not every server can list them. */
  private async abortAbandonedUploads(now: number): Promise<void> {
    let listed: ListMultipartUploadsCommandOutput;
    try {
      listed = await this.s3.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.homesPrefix() }));
    } catch {
      // s3rver answers NotImplemented; a bucket lifecycle rule (AbortIncompleteMultipartUpload) covers real S3 too.
      return;
    }
    for (const upload of listed.Uploads ?? []) {
      if (now - (upload.Initiated?.getTime() ?? now) < this.abandonAfterMs) continue;
      await this.s3
        .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.Key, UploadId: upload.UploadId }))
        .catch(() => {});
    }
  }

  /** Runs one bucket call; anything but our own errors becomes UNAVAILABLE without the SDK's request details. */
  private async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (error instanceof AgentComputerError) throw error;
      throw this.unavailable(what, error);
    }
  }

  private unavailable(what: string, error: unknown): AgentComputerError {
    const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
    if (e?.name === "AbortError")
      return new AgentComputerError("ABORTED", `The home store stopped ${what}: the operation was aborted.`);
    // Only the error's name and status: SDK errors can carry request details that do not belong in logs.
    const status = e?.$metadata?.httpStatusCode;
    return new AgentComputerError(
      "UNAVAILABLE",
      `The bucket "${this.bucket}" failed while ${what}: ${e?.code ?? e?.name ?? "unknown error"}${status ? ` (HTTP ${status})` : ""}. Check the endpoint, credentials and bucket, then retry.`,
      { details: { bucket: this.bucket, status } },
    );
  }

  private homesPrefix(): string {
    return `${this.prefix}homes/`;
  }

  private objectKey(storageId: string, revision: number, name: string): string {
    return `${this.homesPrefix()}${storageId}/${revision}/${name}`;
  }

  private async emit(event: HomeStoreStage): Promise<void> {
    await this.onStage?.(event);
  }

  private serially<T>(homeKey: string, work: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(homeKey);
    if (queue === undefined) {
      queue = new PQueue({ concurrency: 1 });
      this.queues.set(homeKey, queue);
    }
    return queue.add(work) as Promise<T>;
  }

  private markerPath(homeKey: string): string {
    return join(this.dataDir, "home-revisions", `${homeKey}.json`);
  }

  /** An unreadable marker only costs a download, so it counts as none. */
  private async readMarker(homeKey: string): Promise<CacheMarker | undefined> {
    try {
      const marker = JSON.parse(await readFile(this.markerPath(homeKey), "utf8")) as CacheMarker;
      return typeof marker.revision === "number" && typeof marker.storageId === "string" ? marker : undefined;
    } catch {
      return undefined;
    }
  }

  /** Written to a temporary file and renamed, so a crash leaves the old or the new marker. */
  private async writeMarker(marker: CacheMarker): Promise<void> {
    const path = this.markerPath(marker.homeKey);
    await mkdir(join(this.dataDir, "home-revisions"), { recursive: true });
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(marker)}\n`);
    await rename(temporary, path);
  }
}

/** `config` with an idle-socket limit, unless the caller chose its own request handler. */
function withIdleTimeout(config: S3ClientConfig): S3ClientConfig {
  if (config.requestHandler !== undefined) return config;
  return { ...config, requestHandler: { socketTimeout: IDLE_SOCKET_MS, connectionTimeout: CONNECT_TIMEOUT_MS } };
}

function checkedStorageId(record: HomeRecord): string {
  if (!storageIdPattern.test(record.storageId))
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The storage id of home "${record.homeKey}" cannot name objects: use letters, digits, '.', '_' and '-' (at most 128).`,
    );
  return record.storageId;
}

function publicOf(marker: CacheMarker | undefined): HomeCheckpoint | undefined {
  if (marker === undefined) return undefined;
  const { storageId: _storageId, ...checkpoint } = marker;
  return checkpoint;
}

function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NoSuchKey" || e?.name === "NotFound" || e?.$metadata?.httpStatusCode === 404;
}

/** Cuts a stream into parts of exactly `size` bytes (the last one shorter), one copy per part. */
async function* partsOf(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let chunks: Buffer[] = [];
  let filled = 0;
  for await (const chunk of source) {
    let rest = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (filled + rest.length >= size) {
      const take = size - filled;
      chunks.push(rest.subarray(0, take));
      yield Buffer.concat(chunks, size);
      rest = rest.subarray(take);
      chunks = [];
      filled = 0;
    }
    if (rest.length > 0) {
      // A view, not a copy: the sealer hands on node:crypto's own buffers and never reuses one.
      chunks.push(rest);
      filled += rest.length;
    }
  }
  if (filled > 0) yield Buffer.concat(chunks, filled);
}

/** Hashes what passes through. */
async function* tap(
  source: AsyncIterable<Uint8Array>,
  hash: ReturnType<typeof createHash>,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    hash.update(chunk);
    yield chunk;
  }
}

/**
 * Hands each chunk of the archive both to the staging (the iterator's
 * consumer) and to the sealer, waiting for the sealer to drain so the
 * slower of upload and staging sets the pace and nothing piles up.
 */
async function* teeInto(
  source: AsyncIterable<Uint8Array>,
  sink: PassThrough,
  hash: ReturnType<typeof createHash>,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    hash.update(chunk);
    await write(sink, chunk);
    yield chunk;
  }
  sink.end();
}

async function feed(
  source: AsyncIterable<Uint8Array>,
  sink: PassThrough,
  hash: ReturnType<typeof createHash>,
): Promise<void> {
  for await (const chunk of source) {
    hash.update(chunk);
    await write(sink, chunk);
  }
  sink.end();
}

function write(sink: PassThrough, chunk: Uint8Array): Promise<void> {
  if (sink.destroyed) return Promise.reject(sink.errored ?? new Error("the upload stopped"));
  if (sink.write(chunk)) return Promise.resolve();
  return new Promise((resolveDrain, reject) => {
    const done = (error?: Error) => {
      sink.off("drain", onDrain);
      sink.off("close", onClose);
      if (error) reject(error);
      else resolveDrain();
    };
    const onDrain = () => done();
    const onClose = () => done(sink.errored ?? new Error("the upload stopped"));
    sink.once("drain", onDrain);
    sink.once("close", onClose);
  });
}

/** Reads at least `bytes` of a stream (if it has them) and gives them back with a stream that replays them first. */
async function peekStart(
  body: AsyncIterable<Uint8Array>,
  bytes: number,
): Promise<{ head: Buffer; stream: AsyncIterable<Uint8Array> }> {
  const iterator = body[Symbol.asyncIterator]();
  const read: Uint8Array[] = [];
  let length = 0;
  let done = false;
  while (length < bytes) {
    const step = await iterator.next();
    if (step.done) {
      done = true;
      break;
    }
    read.push(step.value);
    length += step.value.byteLength;
  }
  async function* replay(): AsyncGenerator<Uint8Array> {
    yield* read;
    if (done) return;
    for (;;) {
      const step = await iterator.next();
      if (step.done) return;
      yield step.value;
    }
  }
  return { head: Buffer.concat(read), stream: replay() };
}

async function collectBytes(stream: AsyncIterable<Uint8Array>, limit: number): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const part of stream) {
    length += part.byteLength;
    if (length > limit)
      throw new AgentComputerError(
        "CHECKPOINT_CORRUPT",
        `The checkpoint's manifest is over ${limit} bytes; nothing was restored from it.`,
      );
    parts.push(part);
  }
  return Buffer.concat(parts);
}

/** Where each chunk of a manifest lies in the home it describes (the cache after a restore). */
function placesOf(manifest: HomeManifest): Map<string, ChunkPlace> {
  const places = new Map<string, ChunkPlace>();
  for (const entry of manifest.entries) {
    if (entry.kind !== "file") continue;
    let offset = 0;
    for (const chunk of entry.chunks) {
      if (!places.has(chunk.name)) places.set(chunk.name, { path: entry.path, offset, size: chunk.size });
      offset += chunk.size;
    }
  }
  return places;
}
