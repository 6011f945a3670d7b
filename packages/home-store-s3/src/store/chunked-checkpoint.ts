import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import {
  type HomeCheckpoint,
  type HomeSource,
  packHome,
  recoverInterruptedRestore,
  type StagedHome,
  stageHome,
} from "@agent-computer/checkpoint";
import { AgentComputerError, type OpContext, signalOf, throwIfDone } from "@agent-computer/core";
import { type ChunkKeys, chunkKeysOf } from "../chunked/chunk-keys.js";
import type { HomeManifest } from "../chunked/home-manifest.js";
import { type ChunkPlace, snapshotHome } from "../chunked/home-snapshot.js";
import { sealManifest } from "../chunked/sealed-manifest.js";
import { deleteLeftovers, writeCommittedPointer } from "./committed-revision.js";
import { type CacheMarker, publicOf } from "./home-cache.js";
import { checkedStorageId } from "./home-keys.js";
import type { CheckpointJob, StoreContext } from "./store-context.js";

/**
 * A chunked checkpoint (README "Format 2"): the home is checked into a
 * staging folder of the cache, then cut into chunks named by their HMAC;
 * only chunks the bucket lacks are sealed and uploaded, then the sealed
 * manifest goes where format 1 put the archive
 * (`homes/<storage-id>/<revision>/<attempt>`), so the fenced commit,
 * pointer and clean-up are the same. Nothing reads as current before the
 * commit: a checkpoint that fails midway leaves chunks no manifest names
 * (the reconciler's) and at most an uncommitted manifest.
 */
export async function takeChunkedCheckpoint(store: StoreContext, job: CheckpointJob): Promise<HomeCheckpoint> {
  const { homeKey, source, commit, ctx } = job;
  const { bucket, cache } = store;
  throwIfDone(ctx, "checkpoint");
  const record = await store.keys.recordOf(homeKey);
  const storageId = checkedStorageId(record);
  const dataKey = await store.keys.dataKeyOf(record);
  const keys = chunkKeysOf(dataKey, storageId);
  const next = record.revision + 1;
  const attempt = randomBytes(12).toString("hex");
  const objectKey = bucket.objectKey(storageId, next, attempt);
  await recoverInterruptedRestore(cache.homeDir(homeKey));
  await store.emit({ stage: "packing", homeKey, revision: next });
  const { staged, swap } = await stageSource(store, homeKey, source, ctx);
  let snapshot: ReturnType<typeof snapshotHome>;
  let digest: string;
  try {
    snapshot = snapshotHome(staged.stagingDir, keys);
    const manifest: HomeManifest = { format: 2, storageId, revision: next, entries: snapshot.entries };
    const sealed = sealManifest(keys, manifest);
    digest = sealed.digest;
    const committed = await cache.readChunkIndex(homeKey, storageId, record.revision);
    const signal = signalOf(ctx, "checkpoint");
    const bytes = await uploadMissingChunks(store, {
      keys,
      root: staged.stagingDir,
      places: snapshot.places,
      committed,
      homeKey,
      revision: next,
      signal,
    });
    await bucket.putBytes(objectKey, sealed.sealed, "writing a manifest", signal);
    await store.emit({ stage: "uploaded", homeKey, revision: next, objectKey, bytes: bytes + sealed.sealed.length });
    throwIfDone(ctx, "checkpoint");
    await store.emit({ stage: "committing", homeKey, revision: next });
    if (commit) await commit(next);
    else await store.keys.records.advanceRevision({ homeKey, expectedRevision: record.revision, next });
  } catch (error) {
    await staged.discard();
    await bucket.deleteKeys([objectKey]).catch(() => {});
    throw error;
  }
  await store.emit({ stage: "cleaning-up", homeKey, revision: next });
  await writeCommittedPointer(bucket, dataKey, storageId, next, attempt);
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
  await cache.writeChunkIndex(homeKey, storageId, next, snapshot.places);
  await cache.writeMarker(checkpoint);
  // Chunks stay: the reconciler removes the unreferenced ones under its grace rule (chunk-collection.ts).
  // Best effort: a committed checkpoint is never reported failed for its clean-up.
  await deleteLeftovers(bucket, storageId, [record.revision, next], next, attempt).catch(() => {});
  return publicOf(checkpoint) as HomeCheckpoint;
}

/** Checks the source into a staging folder: beside the cache (swapped in after the commit), or, for a mounted home, a scratch one. */
async function stageSource(
  store: StoreContext,
  homeKey: string,
  source: HomeSource,
  ctx: OpContext,
): Promise<{ staged: StagedHome; swap: boolean }> {
  const home = store.cache.homeDir(homeKey);
  const limits = store.settings.limits;
  if ("machine" in source) {
    const resume = await source.machine.quiesceDesktops?.(ctx);
    try {
      const tar = await source.machine.files.exportWorkspace(ctx);
      return { staged: await stageHome(tar, home, limits), swap: true };
    } finally {
      await resume?.();
    }
  }
  if ("mounted" in source) {
    // The live home is the cache: read it through the packer's link-safe walk into a scratch copy.
    await mkdir(home, { recursive: true });
    const scratch = await store.cache.scratchDir(homeKey);
    return { staged: await stageHome(packHome(home).tar, scratch, limits), swap: false };
  }
  if (resolve(source.dir) === home)
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The source folder is the store's own copy of "${homeKey}"; use { mounted: true } for a mounted home.`,
    );
  return { staged: await stageHome(packHome(source.dir).tar, home, limits), swap: true };
}

/**
 * Uploads the chunks the bucket does not hold. Chunks a deletion mark
 * names count as absent and go up again, and the manifest must follow
 * within half the grace period: the reconciler's side of that rule is in
 * chunk-collection.ts.
 */
async function uploadMissingChunks(
  store: StoreContext,
  upload: {
    keys: ChunkKeys;
    root: string;
    places: ReadonlyMap<string, ChunkPlace>;
    /** This host's chunk index of the committed revision (empty when it has none). */
    committed: ReadonlyMap<string, ChunkPlace>;
    homeKey: string;
    revision: number;
    signal: AbortSignal;
  },
): Promise<number> {
  const { keys, committed, places } = upload;
  const bucket = store.bucket.chunkBucket(keys.storageId);
  const graceMs = store.settings.chunkGraceMs;
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
  await store.emit({ stage: "uploading", homeKey: upload.homeKey, revision: upload.revision, part: 1, bytes: 0 });
  const bytes = await bucket.upload(keys, upload.root, missing, store.settings.chunkConcurrency, upload.signal);
  if (Date.now() - listedAt >= graceMs / 2)
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The chunk upload took over half the chunk grace period (${graceMs} ms), so the reconciler may already be collecting chunks it reuses; checkpoint again (or raise chunkGraceMs).`,
    );
  return bytes;
}
