import { restoreHomeEntries } from "@agent-computer/checkpoint";
import { chunkKeysOf } from "../chunked/chunk-keys.js";
import { type ChunkRef, locationOf, type PackRef } from "../chunked/home-manifest.js";
import { readPlace } from "../chunked/home-snapshot.js";
import { manifestEntries } from "../chunked/manifest-entries.js";
import { PackReader } from "../chunked/pack-reader.js";
import { isChunk } from "../chunked/sealed-chunk.js";
import { openManifest } from "../chunked/sealed-manifest.js";
import { stampFiles } from "./file-stamps.js";
import { type CacheMarker, placesOf } from "./home-cache.js";
import type { StoreContext } from "./store-context.js";

/** The committed revision being brought into the cache. */
export interface RevisionToSync {
  readonly homeKey: string;
  readonly storageId: string;
  readonly revision: number;
  readonly dataKey: Uint8Array;
  /** The revision object's time, the restored checkpoint's `createdAt`. */
  readonly createdAt: number;
}

/**
 * Brings the cache to a chunked revision: the manifest is opened and
 * checked, each chunk taken from the cache when the previous revision left
 * it there (read where the chunk index says and used only if its HMAC is
 * the chunk's name, so a changed or planted cache file is never trusted)
 * and fetched from the bucket otherwise, and the home staged and swapped
 * in whole by the codec.
 */
export async function restoreChunked(
  store: StoreContext,
  target: RevisionToSync,
  sealed: Buffer,
  signal: AbortSignal,
): Promise<CacheMarker> {
  const { homeKey, storageId, revision } = target;
  const keys = chunkKeysOf(target.dataKey, storageId);
  const { manifest, digest } = openManifest(keys, revision, sealed, store.settings.limits);
  const home = store.cache.homeDir(homeKey);
  const { places: index } = await store.cache.readChunkIndex(homeKey, storageId);
  const bucket = store.bucket.chunkBucket(storageId);
  // Every read from a pack, in the order the restore asks (pack-reader.ts), but only of chunks the cache does not seem to have.
  const packUses: PackRef[] = [];
  for (const entry of manifest.entries)
    if (entry.kind === "file")
      for (const chunk of entry.chunks) {
        const { pack } = locationOf(manifest, chunk);
        if (pack !== undefined && index.get(chunk.name)?.size !== chunk.size) packUses.push(pack);
      }
  // Downloads are what a restore waits on (a 256 MiB home of eight files against s3rver: the
  // process idle two thirds of the time with 8 chunks ahead; 2.7 s then, 2.15 s with 16), and a
  // chunk held ahead costs 1 MiB, not the 4 MiB packs an upload holds: twice the uploads' count
  // of chunks ahead, and as many packs.
  const window = 2 * store.settings.chunkConcurrency;
  const packs = new PackReader(bucket, keys, packUses, store.settings.chunkConcurrency, signal);
  const source = async (chunk: ChunkRef) => {
    const place = index.get(chunk.name);
    if (place !== undefined && place.size === chunk.size) {
      const plain = readPlace(home, place);
      if (plain !== undefined && isChunk(keys, chunk.name, plain)) return plain;
    }
    const { pack, at } = locationOf(manifest, chunk);
    if (pack === undefined) return bucket.fetch(keys, chunk.name, chunk.size, signal);
    return packs.chunk(chunk.name, chunk.size, pack, at as number);
  };
  const stats = await restoreHomeEntries(manifestEntries(manifest, source, window), home, store.settings.limits);
  await store.cache.writeChunkIndex(
    homeKey,
    storageId,
    revision,
    placesOf(manifest),
    stampFiles(home, manifest.entries),
  );
  const synced: CacheMarker = {
    homeKey,
    storageId,
    revision,
    createdAt: target.createdAt,
    bytes: stats.bytes,
    files: stats.files,
    digest,
    mounted: false,
  };
  await store.cache.writeMarker(synced);
  return synced;
}
