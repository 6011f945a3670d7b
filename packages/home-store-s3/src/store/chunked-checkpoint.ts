import { randomBytes } from "node:crypto";
import type { BigIntStats } from "node:fs";
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
import { AgentComputerError, type OpContext, throwIfDone } from "@agent-computer/core";
import { type ChunkKeys, chunkKeysOf } from "../chunked/chunk-keys.js";
import { ChunkUploader } from "../chunked/chunk-uploader.js";
import { type ChunkLocation, type HomeManifest, locationsOf, placeChunks } from "../chunked/home-manifest.js";
import { type ChunkSink, type HomeSnapshot, type KnownChunks, snapshotHome } from "../chunked/home-snapshot.js";
import { isManifest, openManifest, sealManifest } from "../chunked/sealed-manifest.js";
import type { HomeRecord } from "../home-record.js";
import { currentObject, deleteLeftovers, writeCommittedPointer } from "./committed-revision.js";
import { type FileStamp, stampFiles, unchangedFiles } from "./file-stamps.js";
import { type CacheMarker, publicOf } from "./home-cache.js";
import { checkedStorageId } from "./home-keys.js";
import { type MountedHomeRead, readMountedHome } from "./mounted-home-read.js";
import { operationSignal } from "./operation-signal.js";
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
  // Read before staging, which links the unchanged files and so moves their change times.
  const unchanged = await unchangedSinceCommit(store, homeKey, record, "mounted" in source);
  await store.emit({ stage: "packing", homeKey, revision: next });
  // Fetched and opened while the source is staged, which mostly waits on the codec's writer thread.
  const stored = storedChunks(store, { keys, record, dataKey });
  stored.catch(() => {}); // awaited below; this only keeps a failure while staging from being unhandled
  const input = await checkpointInput(store, homeKey, source, ctx, keys);
  let snapshot: HomeSnapshot;
  let digest: string;
  try {
    const signal = operationSignal(ctx, "checkpoint", store.settings);
    const sent = await uploadSnapshot(store, {
      keys,
      record,
      dataKey,
      read: input.read,
      revision: next,
      stored,
      unchanged,
      signal,
    });
    snapshot = sent.snapshot;
    const sealed = sealManifest(keys, sent.manifest);
    digest = sealed.digest;
    await bucket.putBytes(objectKey, sealed.sealed, "writing a manifest", signal);
    await store.emit({
      stage: "uploaded",
      homeKey,
      revision: next,
      objectKey,
      bytes: sent.bytes + sealed.sealed.length,
    });
    throwIfDone(ctx, "checkpoint");
    await store.emit({ stage: "committing", homeKey, revision: next });
    if (commit) await commit(next, attempt);
    else await store.keys.records.advanceRevision({ homeKey, expectedRevision: record.revision, next, attempt });
  } catch (error) {
    await input.staged?.discard();
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
    ...(await input.counts()),
    digest,
    mounted: "mounted" in source,
  };
  // Chunks stay: the reconciler removes the unreferenced ones under its grace rule (chunk-collection.ts).
  // Best effort: a committed checkpoint is never reported failed for its clean-up.
  const leftovers = deleteLeftovers(bucket, storageId, [record.revision, next], next, attempt).catch(() => {});
  await input.staged?.swapIn();
  // Stamped after the swap, whose removal of the old copy moved the linked files' change times.
  const stamps = input.staged ? stampFiles(cache.homeDir(homeKey), snapshot.entries) : [];
  await cache.writeChunkIndex(homeKey, storageId, next, snapshot.places, stamps, input.liveStamps?.());
  await cache.writeMarker(checkpoint);
  await leftovers;
  return publicOf(checkpoint) as HomeCheckpoint;
}

/** What a checkpoint reads the home from (`checkpointInput`). */
interface CheckpointInput {
  /** The staged copy, swapped in as the cache after the commit; none for a mounted home. */
  readonly staged?: StagedHome;
  /** Reads the home once, naming its chunks (`known` spares reading a staged file linked from the cache). */
  read(sink: ChunkSink, known: KnownChunks): Promise<HomeSnapshot>;
  /** The files and bytes the checkpoint holds, once `read` is done. */
  counts(): Promise<{ files: number; bytes: number }>;
  /** A mounted home's stamps, taken as it was read (mounted-home-read.ts). */
  liveStamps?(): readonly FileStamp[];
}

/**
 * Where the checkpoint reads the source from. A machine's export or a
 * folder is checked into a staging folder beside the cache, swapped in
 * after the commit (its unchanged files linked from the cache, which only
 * this store writes). A mounted home is the cache itself: it is read
 * through the packer's link-safe walk and its chunks named from the tar
 * as it streams (`readHomeArchive`, the restore's rules without the
 * writes): nothing is staged, as nothing is swapped in.
 */
async function checkpointInput(
  store: StoreContext,
  homeKey: string,
  source: HomeSource,
  ctx: OpContext,
  keys: ChunkKeys,
): Promise<CheckpointInput> {
  const home = store.cache.homeDir(homeKey);
  const limits = store.settings.limits;
  const fromStaged = (staged: StagedHome): CheckpointInput => ({
    staged,
    read: (sink, known) => snapshotHome(staged.stagingDir, keys, sink, known),
    counts: async () => ({ files: staged.stats.files, bytes: staged.stats.bytes }),
  });
  const ownCopy = { linkUnchanged: true };
  if ("machine" in source) {
    const resume = await source.machine.quiesceDesktops?.(ctx);
    try {
      const tar = await source.machine.files.exportWorkspace(ctx);
      return fromStaged(await stageHome(tar, home, limits, ownCopy));
    } finally {
      await resume?.();
    }
  }
  if ("mounted" in source) {
    await mkdir(home, { recursive: true });
    let read: MountedHomeRead | undefined;
    const done = () => {
      if (read === undefined) throw new Error("the mounted home was not read yet");
      return read;
    };
    return {
      read: async (sink, known) => {
        read = await readMountedHome(home, { keys, sink, known, limits });
        return read.snapshot;
      },
      counts: async () => ({ files: done().files, bytes: done().bytes }),
      liveStamps: () => done().stamps,
    };
  }
  if (resolve(source.dir) === home)
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The source folder is the store's own copy of "${homeKey}"; use { mounted: true } for a mounted home.`,
    );
  return fromStaged(await stageHome(packHome(source.dir).tar, home, limits, ownCopy));
}

/**
 * Reads the staged home once: each chunk is named, and the ones the bucket
 * lacks are sealed and uploaded as they are read (small ones in packs,
 * chunk-uploader.ts). What the bucket holds is the committed revision's
 * manifest (whose chunks the reconciler never deletes), less what a
 * deletion mark names: those go up again, and the manifest must follow
 * within half the grace period. The reconciler's side of that rule is in
 * chunk-collection.ts.
 */
async function uploadSnapshot(
  store: StoreContext,
  job: {
    keys: ChunkKeys;
    record: HomeRecord;
    dataKey: Uint8Array;
    /** Reads the home, naming its chunks (CheckpointInput). */
    read: CheckpointInput["read"];
    revision: number;
    /** Where the bucket holds chunks, and the committed revision's manifest (`storedChunks`). */
    stored: ReturnType<typeof storedChunks>;
    /** Which files are unchanged since the committed revision (`unchangedSinceCommit`). */
    unchanged: Unchanged | undefined;
    signal: AbortSignal;
  },
): Promise<{ snapshot: HomeSnapshot; manifest: HomeManifest; bytes: number }> {
  const { keys, revision, signal } = job;
  const bucket = store.bucket.chunkBucket(keys.storageId);
  const graceMs = store.settings.chunkGraceMs;
  const listedAt = Date.now();
  const [{ stored, previous }, marks] = await Promise.all([job.stored, bucket.listMarks()]);
  const marked = new Set((await Promise.all(marks.map((m) => bucket.readMark(m)))).flat());
  for (const [name, location] of stored) if (marked.has(location.pack?.name ?? name)) stored.delete(name);
  await store.emit({ stage: "uploading", homeKey: job.record.homeKey, revision, part: 1, bytes: 0 });
  const uploader = new ChunkUploader(bucket, keys, stored, store.settings.chunkConcurrency, signal);
  let snapshot: HomeSnapshot;
  let bytes: number;
  try {
    const known = knownChunks(previous, job.unchanged, stored);
    snapshot = await job.read((name, plain) => uploader.offer(name, plain), known);
    bytes = await uploader.finish();
  } catch (error) {
    await uploader.stop();
    throw error;
  }
  if (Date.now() - listedAt >= graceMs / 2)
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The chunk upload took over half the chunk grace period (${graceMs} ms), so the reconciler may already be collecting chunks it reuses; checkpoint again (or raise chunkGraceMs).`,
    );
  const base = { format: 2 as const, storageId: keys.storageId, revision, entries: snapshot.entries };
  return { snapshot, manifest: placeChunks(base, (name) => uploader.locate(name)), bytes };
}

/**
 * Where the bucket holds chunks: the committed revision's manifest says,
 * authenticated. Without one (a format-1 revision, a deleted home, or a
 * manifest that does not open, which only makes this checkpoint upload
 * more), the chunk objects listed, each standing alone.
 */
async function storedChunks(
  store: StoreContext,
  job: { keys: ChunkKeys; record: HomeRecord; dataKey: Uint8Array },
): Promise<{ stored: Map<string, ChunkLocation>; previous?: HomeManifest }> {
  const { keys, record } = job;
  if (record.revision > 0) {
    const object = await currentObject(
      store.bucket,
      keys.storageId,
      record.revision,
      job.dataKey,
      record.committedAttempt,
    ).catch((error: unknown) => {
      if (AgentComputerError.is(error, "CHECKPOINT_CORRUPT")) return undefined;
      throw error;
    });
    if (object !== undefined && isManifest(await store.bucket.getBytes(object.key, "bytes=0-7"))) {
      const sealed = await store.bucket.getBytes(object.key);
      try {
        const { manifest } = openManifest(keys, record.revision, sealed, store.settings.limits);
        return { stored: locationsOf(manifest), previous: manifest };
      } catch (error) {
        if (!AgentComputerError.is(error, "CHECKPOINT_CORRUPT")) throw error;
      }
    }
  }
  const listed = await store.bucket.chunkBucket(keys.storageId).listChunks();
  return { stored: new Map(listed.map((o): [string, ChunkLocation] => [o.name, {}])) };
}

/**
 * Whether a file of the cache is untouched since the committed revision's
 * checkpoint or restore stamped it (file-stamps.ts), read before staging;
 * the stamps count only if they are that revision's. For a folder or a
 * machine the staged file must be the cache's very inode, unchanged when
 * it was listed; a mounted home is live, so only the stamps its own last
 * checkpoint took as it read each file are trusted, matched against the
 * file as it is open now (mounted-home-read.ts).
 */
async function unchangedSinceCommit(
  store: StoreContext,
  homeKey: string,
  record: HomeRecord,
  mounted: boolean,
): Promise<Unchanged | undefined> {
  if (record.revision === 0) return undefined;
  const index = await store.cache.readChunkIndex(homeKey, checkedStorageId(record), record.revision);
  if (mounted) {
    if (index.liveStamps.length === 0) return undefined;
    const stamps = new Map(index.liveStamps.map(([path, ino, ctimeNs]) => [path, `${ino} ${ctimeNs}`]));
    return (path, stat) => stamps.get(path) === `${stat.ino} ${stat.ctimeNs}`;
  }
  const unchanged = unchangedFiles(store.cache.homeDir(homeKey), index.stamps);
  if (unchanged.size === 0) return undefined;
  return (path, stat) => unchanged.get(path) === stat.ino;
}

/** Whether the file at `path`, as `stat` says it is now, is the one the committed revision's manifest lists. */
type Unchanged = (path: string, stat: BigIntStats) => boolean;

/**
 * A file's chunks without reading it: when it is unchanged since the
 * committed revision (`unchangedSinceCommit`) and the authenticated
 * manifest of that revision lists it at the same size, its bytes are the
 * ones that manifest names. Not when a chunk of it is missing from the
 * bucket (a deletion mark named it): then the file is read and the chunk
 * goes up again.
 */
function knownChunks(
  previous: HomeManifest | undefined,
  unchanged: Unchanged | undefined,
  stored: ReadonlyMap<string, ChunkLocation>,
): KnownChunks {
  if (previous === undefined || unchanged === undefined) return () => undefined;
  const files = new Map(previous.entries.flatMap((entry) => (entry.kind === "file" ? [[entry.path, entry]] : [])));
  return (path, stat) => {
    const entry = files.get(path);
    if (entry === undefined || BigInt(entry.size) !== stat.size || !unchanged(path, stat)) return undefined;
    return entry.chunks.every((chunk) => stored.has(chunk.name)) ? entry.chunks : undefined;
  };
}
