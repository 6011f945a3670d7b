import { type BigIntStats, closeSync, constants, lstatSync, openSync, readdirSync, readSync } from "node:fs";
import { join } from "node:path";
import type { HomeEntryItem } from "@agent-computer/checkpoint";
import type { ChunkKeys } from "./chunk-keys.js";
import type { ChunkRef, HomeManifestEntry } from "./home-manifest.js";
import { CHUNK_BYTES, chunkName } from "./sealed-chunk.js";

/** Where a chunk's bytes are on disk: `size` bytes at `offset` of the home-relative `path`. */
export interface ChunkPlace {
  readonly path: string;
  readonly offset: number;
  readonly size: number;
}

/** A home as manifest entries, and where on disk each named chunk can be read again. */
export interface HomeSnapshot {
  readonly entries: HomeManifestEntry[];
  readonly places: Map<string, ChunkPlace>;
}

/** Called with each chunk as it is read; `plain` is reused once the returned promise exists. */
export type ChunkSink = (name: string, plain: Buffer) => Promise<void>;

/**
 * The chunks of a file the caller already knows, from the previous
 * revision's manifest when the staged file is that revision's very inode
 * (chunked-checkpoint.ts); undefined when the file must be read.
 */
export type KnownChunks = (path: string, stat: BigIntStats) => readonly ChunkRef[] | undefined;

/**
 * Names every chunk of a home already checked and staged by the codec
 * (`stageHome`: only directories and regular files, nothing a bot can swap
 * under us), in byte order of names so equal homes give equal manifests.
 * Reads each file once, handing each chunk to `sink` (the uploader seals
 * the ones the bucket lacks right then, so no byte is read or hashed twice),
 * except the files `known` names the chunks of, which are not read at all.
 */
export async function snapshotHome(
  root: string,
  keys: ChunkKeys,
  sink: ChunkSink,
  known: KnownChunks = () => undefined,
): Promise<HomeSnapshot> {
  const entries: HomeManifestEntry[] = [];
  const places = new Map<string, ChunkPlace>();
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const walk = async (relative: string) => {
    for (const name of byteOrder(readdirSync(join(root, relative)))) {
      const path = relative === "" ? name : `${relative}/${name}`;
      const stat = lstatSync(join(root, path), { bigint: true });
      const mode = Number(stat.mode & 0o7777n);
      const mtime = Math.max(0, Number(stat.mtimeMs / 1000n));
      if (stat.isDirectory()) {
        entries.push({ path, kind: "directory", mode, mtime });
        await walk(path);
      } else if (stat.isFile()) {
        const size = Number(stat.size);
        const reused = known(path, stat);
        const chunks =
          reused === undefined
            ? await nameChunks(root, path, size, keys, buffer, places, sink)
            : placeKnown(path, reused, places);
        entries.push({ path, kind: "file", mode, mtime, size, chunks });
      }
    }
  };
  await walk("");
  return { entries, places };
}

/**
 * Names every chunk of a home given as entries (`readHomeArchive` of a
 * mounted home's `packHome` tar, chunked-checkpoint.ts): the manifest a
 * walk of the restored home would give, in the entries' order, each file
 * cut where `snapshotHome` cuts it. Every byte is read once, as it comes;
 * places are the entries' paths, so they point into the folder that was
 * packed, where a restore checks a chunk's name before it trusts it.
 */
export async function snapshotEntries(
  items: AsyncIterable<HomeEntryItem>,
  keys: ChunkKeys,
  sink: ChunkSink,
): Promise<HomeSnapshot> {
  const entries: HomeManifestEntry[] = [];
  const places = new Map<string, ChunkPlace>();
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let file: { path: string; size: number; chunks: ChunkRef[]; offset: number } | undefined;
  let filled = 0;
  const cut = async () => {
    if (file === undefined || filled === 0) return;
    const piece = buffer.subarray(0, filled);
    const name = chunkName(keys, piece);
    file.chunks.push({ name, size: filled });
    if (!places.has(name)) places.set(name, { path: file.path, offset: file.offset, size: filled });
    file.offset += filled;
    filled = 0;
    await sink(name, piece);
  };
  for await (const item of items) {
    if (!(item instanceof Uint8Array)) {
      await cut();
      if (item.kind === "directory") {
        entries.push({ path: item.path, kind: "directory", mode: item.mode, mtime: item.mtime });
        file = undefined;
        continue;
      }
      file = { path: item.path, size: item.size, chunks: [], offset: 0 };
      entries.push({
        path: item.path,
        kind: "file",
        mode: item.mode,
        mtime: item.mtime,
        size: item.size,
        chunks: file.chunks,
      });
      continue;
    }
    for (let at = 0; at < item.length; ) {
      const count = Math.min(CHUNK_BYTES - filled, item.length - at);
      buffer.set(item.subarray(at, at + count), filled);
      filled += count;
      at += count;
      if (filled === CHUNK_BYTES) await cut();
    }
  }
  await cut();
  return { entries, places };
}

/** Names in byte order of their UTF-8, each encoded once (a folder of 400 files: not 7,000 encodings in the compares). */
function byteOrder(names: string[]): string[] {
  return names
    .map((name) => ({ name, bytes: Buffer.from(name) }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ name }) => name);
}

/** The known chunks of the file at `path`, each placed where it lies in the file. */
export function placeKnown(path: string, known: readonly ChunkRef[], places: Map<string, ChunkPlace>): ChunkRef[] {
  let offset = 0;
  return known.map(({ name, size }) => {
    if (!places.has(name)) places.set(name, { path, offset, size });
    offset += size;
    return { name, size };
  });
}

async function nameChunks(
  root: string,
  path: string,
  size: number,
  keys: ChunkKeys,
  buffer: Buffer,
  places: Map<string, ChunkPlace>,
  sink: ChunkSink,
): Promise<{ name: string; size: number }[]> {
  const chunks: { name: string; size: number }[] = [];
  if (size === 0) return chunks;
  const fd = openSync(join(root, path), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    for (let offset = 0; offset < size; offset += CHUNK_BYTES) {
      const length = Math.min(CHUNK_BYTES, size - offset);
      const piece = readExactly(fd, buffer, length, offset);
      const name = chunkName(keys, piece);
      chunks.push({ name, size: length });
      if (!places.has(name)) places.set(name, { path, offset, size: length });
      await sink(name, piece);
    }
  } finally {
    closeSync(fd);
  }
  return chunks;
}

/** Reads `length` bytes at `offset` into `buffer`; a file that shrank underneath is an error, not a short chunk. */
export function readExactly(fd: number, buffer: Buffer, length: number, offset: number): Buffer {
  let done = 0;
  while (done < length) {
    const count = readSync(fd, buffer, done, length - done, offset + done);
    if (count === 0) throw new Error("the file shrank while it was read");
    done += count;
  }
  return buffer.subarray(0, length);
}

/** Reads a chunk back from where `place` says, or undefined when it is not there any more. */
export function readPlace(root: string, place: ChunkPlace): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(join(root, place.path), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    return Buffer.from(readExactly(fd, Buffer.allocUnsafe(place.size), place.size, place.offset));
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
