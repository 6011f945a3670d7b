import { createReadStream } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import tar from "tar-stream";

/** What `packHome` put in the archive and what it left out. */
export interface PackStats {
  files: number;
  directories: number;
  /** Bytes of regular-file content. */
  bytes: number;
  /** Entries that are not directories or regular files, by kind. */
  skipped: { symlinks: number; sockets: number; fifos: number; devices: number };
  /** Transient browser-profile files left out (caches, locks). */
  transient: number;
}

export interface PackOptions {
  /** Extra filter: return false to leave a home-relative path out. */
  include?: (relativePath: string) => boolean;
}

export interface PackedHome {
  /** The tar stream: directories and regular files, in a stable order. */
  readonly tar: Readable;
  /** Resolves once the whole archive was produced. */
  readonly stats: Promise<PackStats>;
}

/**
 * Names Chromium rewrites or locks while it runs; restoring them would make a
 * profile look in use or carry stale caches. Left out only inside
 * `.browser-profiles/`, kept everywhere else.
 */
const TRANSIENT_PROFILE_NAMES = new Set([
  "SingletonLock",
  "SingletonSocket",
  "SingletonCookie",
  "lockfile",
  "LOCK",
  "Cache",
  "Code Cache",
  "GPUCache",
  "ShaderCache",
  "GrShaderCache",
  "GraphiteDawnCache",
  "DawnCache",
  "DawnGraphiteCache",
  "Crashpad",
]);

/** True for a home-relative path that is a transient browser-profile file. */
export function isTransientProfilePath(relativePath: string): boolean {
  const parts = relativePath.split("/");
  if (parts[0] !== ".browser-profiles" || parts.length < 3) return false;
  return parts.slice(2).some((part) => TRANSIENT_PROFILE_NAMES.has(part));
}

/**
 * Packs the home at `dir` as one tar stream of directories and regular files,
 * sorted by name so the same tree gives the same archive. Links, sockets,
 * FIFOs and devices are skipped and counted. Streams file content; memory
 * stays bounded whatever the home's size.
 */
export function packHome(dir: string, options: PackOptions = {}): PackedHome {
  const pack = tar.pack();
  const stats: PackStats = {
    files: 0,
    directories: 0,
    bytes: 0,
    skipped: { symlinks: 0, sockets: 0, fifos: 0, devices: 0 },
    transient: 0,
  };
  const include = options.include ?? (() => true);

  async function walk(absolute: string, relative: string): Promise<void> {
    const names = (await readdir(absolute)).sort();
    for (const name of names) {
      const rel = relative === "" ? name : `${relative}/${name}`;
      if (!include(rel)) continue;
      if (isTransientProfilePath(rel)) {
        stats.transient++;
        continue;
      }
      const abs = join(absolute, name);
      const info = await lstat(abs);
      if (info.isDirectory()) {
        await addEntry(pack, { name: `${rel}/`, type: "directory", mode: info.mode & 0o7777, mtime: info.mtime });
        stats.directories++;
        await walk(abs, rel);
      } else if (info.isFile()) {
        const entry = pack.entry({
          name: rel,
          type: "file",
          size: info.size,
          mode: info.mode & 0o7777,
          mtime: info.mtime,
        });
        await pipeline(createReadStream(abs), entry);
        stats.files++;
        stats.bytes += info.size;
      } else if (info.isSymbolicLink()) stats.skipped.symlinks++;
      else if (info.isSocket()) stats.skipped.sockets++;
      else if (info.isFIFO()) stats.skipped.fifos++;
      else stats.skipped.devices++;
    }
  }

  const done = walk(dir, "").then(
    () => {
      pack.finalize();
      return stats;
    },
    (error: unknown) => {
      pack.destroy(error as Error);
      throw error;
    },
  );
  // The stream carries the error to its reader; keep the promise from being
  // reported as unhandled when nobody awaits the stats.
  done.catch(() => {});
  // tar-stream speaks streamx; hand callers a plain Node stream.
  return { tar: Readable.from(pack, { objectMode: false }), stats: done };
}

function addEntry(pack: tar.Pack, header: Partial<tar.Header> & { name: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, (error) => (error ? reject(error) : resolve()));
  });
}
