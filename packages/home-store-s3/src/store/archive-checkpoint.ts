import { createHash, randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { PassThrough, type Readable } from "node:stream";
import {
  type HomeCheckpoint,
  type HomeSource,
  packHome,
  recoverInterruptedRestore,
  type StagedHome,
  sealCheckpoint,
  stageHome,
} from "@agent-computer/checkpoint";
import { AgentComputerError, type OpContext, throwIfDone } from "@agent-computer/core";
import { writeCommittedPointer } from "./committed-revision.js";
import { type CacheMarker, publicOf } from "./home-cache.js";
import { checkedStorageId } from "./home-keys.js";
import { uploadMultipart } from "./multipart-upload.js";
import { operationSignal } from "./operation-signal.js";
import { COMMITTED } from "./store-bucket.js";
import type { CheckpointJob, StoreContext } from "./store-context.js";

const MIB = 1024 * 1024;

type Archive = AsyncIterable<Uint8Array> & { destroy(error?: Error): void };

/**
 * A format-1 checkpoint (README "Format 1", no longer the default: kept so
 * the migration tests and the bench's baseline can write what older
 * releases wrote). The home is packed, checked into a staging folder of
 * the cache while sealed (64 KiB AES-256-GCM segments bound to the storage
 * id and revision) under the home's data key and streamed as a multipart
 * upload to `homes/<storage-id>/<revision>/<attempt>`; then the commit hook
 * decides; then the winner writes the committed pointer and deletes older
 * objects.
 */
export async function takeArchiveCheckpoint(store: StoreContext, job: CheckpointJob): Promise<HomeCheckpoint> {
  const { homeKey, source, commit, ctx } = job;
  const { bucket, cache, keys } = store;
  throwIfDone(ctx, "checkpoint");
  const record = await keys.recordOf(homeKey);
  const storageId = checkedStorageId(record);
  const dataKey = await keys.dataKeyOf(record);
  const next = record.revision + 1;
  const attempt = randomBytes(12).toString("hex");
  const objectKey = bucket.objectKey(storageId, next, attempt);
  const home = cache.homeDir(homeKey);
  await recoverInterruptedRestore(home);
  await store.emit({ stage: "packing", homeKey, revision: next });

  const signal = operationSignal(ctx, "checkpoint", store.settings);
  const { tar, resume, packStats } = await archiveOf(source, home, homeKey, ctx);

  // Stopping the archive early (a failed upload, an abort) must not become an uncaught 'error' event when
  // the staging has not started reading it yet; the reader still sees the error.
  (tar as unknown as Partial<Readable>).on?.("error", () => {});
  const hash = createHash("sha256");
  // The sealer reads from `plain`; the cache's staging (when there is one) drives the archive.
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
    const uploading = uploadMultipart(bucket, {
      key: objectKey,
      body: sealed,
      partBytes: store.settings.partBytes,
      partConcurrency: store.settings.partConcurrency,
      signal,
      onPart: (part, bytes) => store.emit({ stage: "uploading", homeKey, revision: next, part, bytes }),
    });
    // A mounted home is the cache itself: nothing to stage, its pack stats describe it.
    feeding =
      "mounted" in source
        ? feed(tar, plain, hash).then(() => undefined)
        : stageHome(teeInto(tar, plain, hash), home, store.settings.limits, { linkUnchanged: true });
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
  await store.emit({ stage: "uploaded", homeKey, revision: next, objectKey, bytes: uploadedBytes });

  try {
    throwIfDone(ctx, "checkpoint");
    await store.emit({ stage: "committing", homeKey, revision: next });
    if (commit) await commit(next, attempt);
    else await keys.records.advanceRevision({ homeKey, expectedRevision: record.revision, next, attempt });
  } catch (error) {
    // The fence said no (or the caller gave up): this attempt's object is nobody's.
    await staged?.discard();
    await bucket.deleteKeys([objectKey]).catch(() => {});
    throw error;
  }

  await store.emit({ stage: "cleaning-up", homeKey, revision: next });
  await writeCommittedPointer(bucket, dataKey, storageId, next, attempt);
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
  await cache.writeMarker(checkpoint);
  // Older revisions and losing attempts of this one; a failure here leaves work for the reconciler, not a wrong
  // home, and must not report the committed checkpoint as failed (the fault storm found both listing and deleting fail).
  await bucket
    .listObjects(`${bucket.homesPrefix()}${storageId}/`)
    .then((objects) =>
      bucket.deleteKeys(
        objects
          .filter((o) => o.revision < next || (o.revision === next && o.name !== attempt && o.name !== COMMITTED))
          .map((o) => o.key),
      ),
    )
    .catch(() => {});
  return publicOf(checkpoint) as HomeCheckpoint;
}

/** The home as a tar stream: exported from the machine (its desktops paused) or packed from a folder. */
async function archiveOf(
  source: HomeSource,
  home: string,
  homeKey: string,
  ctx: OpContext,
): Promise<{
  tar: Archive;
  resume: (() => Promise<void>) | undefined;
  packStats: Promise<{ files: number; bytes: number }> | undefined;
}> {
  if ("machine" in source) {
    // Browsers rewrite their profiles while they run; pause them for a consistent export.
    const resume = await source.machine.quiesceDesktops?.(ctx);
    try {
      return { tar: await source.machine.files.exportWorkspace(ctx), resume, packStats: undefined };
    } catch (error) {
      await resume?.();
      throw error;
    }
  }
  const dir = "mounted" in source ? home : source.dir;
  if ("dir" in source && resolve(source.dir) === home)
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The source folder is the store's own copy of "${homeKey}"; use { mounted: true } for a mounted home.`,
    );
  if ("mounted" in source) await mkdir(home, { recursive: true });
  const packed = packHome(dir);
  return { tar: packed.tar, resume: undefined, packStats: packed.stats };
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
