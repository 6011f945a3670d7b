import type { BigIntStats } from "node:fs";
import { DEFAULT_RESTORE_LIMITS, packHome, type RestoreLimits, readHomeArchive } from "@agent-computer/checkpoint";
import { AgentComputerError } from "@agent-computer/core";
import type { ChunkKeys } from "../chunked/chunk-keys.js";
import type { HomeManifestEntry } from "../chunked/home-manifest.js";
import {
  type ChunkSink,
  type HomeSnapshot,
  type KnownChunks,
  placeKnown,
  snapshotEntries,
} from "../chunked/home-snapshot.js";
import type { FileStamp } from "./file-stamps.js";

/**
 * A file changed this close to the checkpoint's start gets no stamp: the
 * kernel's file times move in clock ticks (and in whole seconds on some
 * file systems), so a write in the same tick as the change before it
 * would leave the stamp matching a file that changed (git's "racily
 * clean" entries). Such a file is read again next time.
 */
const STAMP_MARGIN_NS = 2_000_000_000n;

/** A mounted home as read for a checkpoint (`readMountedHome`). */
export interface MountedHomeRead {
  readonly snapshot: HomeSnapshot;
  /** Each file's stamp as it was open, taken before a byte was read; none for one changed within the margin. */
  readonly stamps: FileStamp[];
  readonly files: number;
  readonly bytes: number;
}

/**
 * Reads a mounted home (the live cache folder a provider mounts) for a
 * checkpoint, through `packHome`'s link-safe walk, whose `reuse` hook sees
 * each file open before a byte of it is read. A file `known` gives the
 * chunks of (its stamp from the committed revision still matches the open
 * file) stays out of the tar and keeps that revision's entry; the others
 * are named from the tar as it streams (`snapshotEntries`), under the
 * restore's rules (`readHomeArchive`). The stat taken at open is the
 * file's stamp for the next checkpoint: a write after it moves the
 * change time, so the next checkpoint reads the file again.
 */
export async function readMountedHome(
  home: string,
  job: { keys: ChunkKeys; sink: ChunkSink; known: KnownChunks; limits: RestoreLimits },
): Promise<MountedHomeRead> {
  const startedNs = BigInt(Date.now()) * 1_000_000n;
  const stamps: FileStamp[] = [];
  const carried: HomeManifestEntry[] = [];
  let carriedData = 0;
  const packed = packHome(home, {
    reuse: (path, stat) => {
      if (stat.ctimeNs < startedNs - STAMP_MARGIN_NS) stamps.push([path, String(stat.ino), String(stat.ctimeNs)]);
      const chunks = job.known(path, stat);
      if (chunks === undefined) return false;
      carried.push({ path, kind: "file", ...modeAndTime(stat), size: Number(stat.size), chunks: [...chunks] });
      // Its data, as the tar would count it: a sparse file's holes take none.
      carriedData += Math.min(Number(stat.size), Number(stat.blocks) * 512);
      return true;
    },
  });
  const read = await snapshotEntries(readHomeArchive(packed.tar, job.limits), job.keys, job.sink);
  const stats = await packed.stats;
  for (const entry of carried) if (entry.kind === "file") placeKnown(entry.path, entry.chunks, read.places);
  const entries = mergeInWalkOrder(read.entries, carried);
  const bounds = { ...DEFAULT_RESTORE_LIMITS, ...job.limits };
  for (const entry of carried)
    if (entry.kind === "file" && entry.size > bounds.maxFileBytes)
      overLimit(
        `${JSON.stringify(entry.path)} is ${entry.size} bytes, over the ${bounds.maxFileBytes}-byte file limit`,
        "maxFileBytes",
      );
  const bytes = stats.bytes + carriedData;
  if (entries.length > bounds.maxEntries)
    overLimit(`the home has more than ${bounds.maxEntries} entries`, "maxEntries");
  if (bytes > bounds.maxTotalBytes)
    overLimit(`the home's files add up to more than ${bounds.maxTotalBytes} bytes`, "maxTotalBytes");
  return { snapshot: { entries, places: read.places }, stamps, files: stats.files + carried.length, bytes };
}

/** A file's mode and mtime as the manifest holds them (what a restore gives it). */
function modeAndTime(stat: BigIntStats): { mode: number; mtime: number } {
  return { mode: Number(stat.mode & 0o777n), mtime: Math.max(0, Number(stat.mtimeMs / 1000n)) };
}

function overLimit(reason: string, limit: string): never {
  throw new AgentComputerError(
    "LIMIT_EXCEEDED",
    `Checkpoint refused: ${reason}. The home is untouched. Raise the limit if this home is meant to be that large.`,
    { details: { limit } },
  );
}

/**
 * Two lists of entries, each in `packHome`'s walk order (depth first, names
 * in code-unit order), as one list in that order: parents before children.
 */
function mergeInWalkOrder(a: readonly HomeManifestEntry[], b: readonly HomeManifestEntry[]): HomeManifestEntry[] {
  const merged: HomeManifestEntry[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length)
    merged.push(
      walkOrder((a[i] as HomeManifestEntry).path, (b[j] as HomeManifestEntry).path) <= 0
        ? (a[i++] as HomeManifestEntry)
        : (b[j++] as HomeManifestEntry),
    );
  while (i < a.length) merged.push(a[i++] as HomeManifestEntry);
  while (j < b.length) merged.push(b[j++] as HomeManifestEntry);
  return merged;
}

function walkOrder(a: string, b: string): number {
  const x = a.split("/");
  const y = b.split("/");
  for (let k = 0; k < Math.min(x.length, y.length); k++) {
    const p = x[k] as string;
    const q = y[k] as string;
    if (p !== q) return p < q ? -1 : 1;
  }
  return x.length - y.length;
}
