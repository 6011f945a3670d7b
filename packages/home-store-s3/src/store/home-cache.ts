import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type HomeCheckpoint, homeKeySchema } from "@agent-computer/checkpoint";
import { parseInput } from "@agent-computer/core";
import type { HomeManifest } from "../chunked/home-manifest.js";
import type { ChunkPlace } from "../chunked/home-snapshot.js";
import type { FileStamp } from "./file-stamps.js";

/** What the chunk index file says of the revision the cache holds. */
export interface CacheIndex {
  readonly places: Map<string, ChunkPlace>;
  readonly stamps: readonly FileStamp[];
  /**
   * Stamps a mounted home's checkpoint took of the live home, each as its
   * file was open before a byte was read (mounted-home-read.ts): the only
   * ones a later mounted checkpoint trusts, since a bot writes that folder.
   */
  readonly liveStamps: readonly FileStamp[];
}

function emptyIndex(): CacheIndex {
  return { places: new Map(), stamps: [], liveStamps: [] };
}

/** The cache's marker: which stored revision `DATA_DIR/homes/<home-key>` holds. */
export interface CacheMarker extends HomeCheckpoint {
  readonly storageId: string;
}

/**
 * The store's local state under DATA_DIR: each home's cache folder
 * (`homes/<home-key>`), the marker saying which revision it holds
 * (`home-revisions/<home-key>.json`), and the chunk index saying where in
 * it each chunk of that revision lies and what its files were stamped
 * (`home-revisions/<home-key>.chunks.json`). All of it is a hint: a lost or
 * stale file only costs a download, or a read of the home.
 */
export class HomeCache {
  constructor(
    /** Absolute DATA_DIR. */
    readonly dataDir: string,
  ) {}

  /** The cache folder of a home (what a mounted-home provider mounts). */
  homeDir(homeKey: string): string {
    return join(this.dataDir, "homes", parseInput(homeKeySchema, homeKey, "home key"));
  }

  /** An unreadable marker only costs a download, so it counts as none. */
  async readMarker(homeKey: string): Promise<CacheMarker | undefined> {
    try {
      const marker = JSON.parse(await readFile(this.markerPath(homeKey), "utf8")) as CacheMarker;
      return typeof marker.revision === "number" && typeof marker.storageId === "string" ? marker : undefined;
    } catch {
      return undefined;
    }
  }

  /** Written to a temporary file and renamed, so a crash leaves the old or the new marker. */
  async writeMarker(marker: CacheMarker): Promise<void> {
    await this.writeAtomically(this.markerPath(marker.homeKey), `${JSON.stringify(marker)}\n`);
  }

  /**
   * Where the cache holds each chunk of the revision it last took, and the
   * stamps of its files then; only hints (restores check every byte, a
   * checkpoint trusts a stamp only if the file still matches it).
   */
  async readChunkIndex(homeKey: string, storageId: string, revision?: number): Promise<CacheIndex> {
    try {
      const saved = JSON.parse(await readFile(this.chunkIndexPath(homeKey), "utf8")) as {
        storageId: string;
        revision: number;
        places: [string, string, number, number][];
        stamps?: FileStamp[];
        liveStamps?: FileStamp[];
      };
      if (saved.storageId !== storageId || (revision !== undefined && saved.revision !== revision)) return emptyIndex();
      const places = new Map(
        saved.places.map(([name, path, offset, size]): [string, ChunkPlace] => [name, { path, offset, size }]),
      );
      return { places, stamps: saved.stamps ?? [], liveStamps: saved.liveStamps ?? [] };
    } catch {
      return emptyIndex();
    }
  }

  async writeChunkIndex(
    homeKey: string,
    storageId: string,
    revision: number,
    places: ReadonlyMap<string, ChunkPlace>,
    stamps: readonly FileStamp[] = [],
    liveStamps: readonly FileStamp[] = [],
  ): Promise<void> {
    const list = [...places].map(([name, p]) => [name, p.path, p.offset, p.size]);
    await this.writeAtomically(
      this.chunkIndexPath(homeKey),
      JSON.stringify({ storageId, revision, places: list, stamps, liveStamps }),
    );
  }

  /** Forgets what the cache holds: after a delete the next checkpoint must upload every chunk. */
  async forget(homeKey: string): Promise<void> {
    await rm(this.markerPath(homeKey), { force: true });
    await rm(this.chunkIndexPath(homeKey), { force: true });
  }

  private markerPath(homeKey: string): string {
    return join(this.dataDir, "home-revisions", `${homeKey}.json`);
  }

  private chunkIndexPath(homeKey: string): string {
    return join(this.dataDir, "home-revisions", `${homeKey}.chunks.json`);
  }

  private async writeAtomically(path: string, text: string): Promise<void> {
    await mkdir(join(this.dataDir, "home-revisions"), { recursive: true });
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, text);
    await rename(temporary, path);
  }
}

export function publicOf(marker: CacheMarker | undefined): HomeCheckpoint | undefined {
  if (marker === undefined) return undefined;
  const { storageId: _storageId, ...checkpoint } = marker;
  return checkpoint;
}

/** Where each chunk of a manifest lies in the home it describes (the cache after a restore). */
export function placesOf(manifest: HomeManifest): Map<string, ChunkPlace> {
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
