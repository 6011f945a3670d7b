import { lstatSync } from "node:fs";
import { join } from "node:path";
import type { HomeManifestEntry } from "../chunked/home-manifest.js";

/** A cache file as the store left it: home-relative path, inode and change time in ns (decimal strings, as saved). */
export type FileStamp = readonly [path: string, ino: string, ctimeNs: string];

/**
 * Stamps the regular files of `entries` under `root` (the cache, just after a
 * checkpoint's swap or a restore), so the next checkpoint can tell which of
 * them nobody has touched since (`unchangedFiles`). The change time is the
 * kernel's: no caller can set it (utimes sets mtime and moves ctime), and
 * any write, chmod, link or unlink of the file moves it; a replaced file
 * has a new inode. What it cannot see is a write within the same clock tick
 * as the stamp, which only another writer of the cache folder could make
 * (README "What the cache trusts").
 */
export function stampFiles(root: string, entries: readonly HomeManifestEntry[]): FileStamp[] {
  const stamps: FileStamp[] = [];
  for (const { path, kind } of entries) {
    const stat = kind === "file" ? statOrUndefined(join(root, path)) : undefined;
    if (stat?.isFile()) stamps.push([path, String(stat.ino), String(stat.ctimeNs)]);
  }
  return stamps;
}

/** The stamped files still as stamped, each home-relative path with its inode. */
export function unchangedFiles(root: string, stamps: readonly FileStamp[]): Map<string, bigint> {
  const unchanged = new Map<string, bigint>();
  for (const [path, ino, ctimeNs] of stamps) {
    const stat = statOrUndefined(join(root, path));
    if (stat?.isFile() && String(stat.ino) === ino && String(stat.ctimeNs) === ctimeNs) unchanged.set(path, stat.ino);
  }
  return unchanged;
}

function statOrUndefined(path: string) {
  try {
    return lstatSync(path, { bigint: true });
  } catch {
    return undefined;
  }
}
