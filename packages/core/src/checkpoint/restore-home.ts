import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import tar from "tar-stream";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { DEFAULT_RESTORE_LIMITS, type RestoreLimits } from "./restore-limits.js";

export interface RestoreStats {
  files: number;
  directories: number;
  bytes: number;
}

/**
 * Restores a home tar into `targetDir`, whole or not at all. Entries are
 * checked (relative paths only, no `.`/`..`/empty segments, no NUL, only
 * directories and regular files, no duplicates, within `limits`) and written
 * into a staging folder beside the target, which is swapped in only after
 * the last entry; on any rejection the target is exactly as before and the
 * staging folder is gone.
 */
export async function restoreHome(
  tarStream: Readable,
  targetDir: string,
  limits: RestoreLimits = {},
): Promise<RestoreStats> {
  const bounds = { ...DEFAULT_RESTORE_LIMITS, ...limits };
  const tag = randomBytes(6).toString("hex");
  const staging = join(dirname(targetDir), `.${basename(targetDir)}.restore-${tag}`);
  await mkdir(dirname(targetDir), { recursive: true });
  await mkdir(staging);
  try {
    const stats = await extractInto(tarStream, staging, bounds);
    await swapIn(staging, targetDir, tag);
    return stats;
  } catch (error) {
    tarStream.destroy();
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

async function extractInto(
  tarStream: Readable,
  staging: string,
  bounds: Required<RestoreLimits>,
): Promise<RestoreStats> {
  const stats: RestoreStats = { files: 0, directories: 0, bytes: 0 };
  const seen = new Set<string>();
  const extract = tar.extract();
  tarStream.on("error", (error) => extract.destroy(error));
  tarStream.pipe(extract);
  try {
    for await (const entry of extract) {
      const { header } = entry;
      const path = checkEntryPath(header.name, bounds);
      if (seen.has(path)) reject(`the archive holds "${path}" twice`);
      seen.add(path);
      if (seen.size > bounds.maxEntries) limit(`more than ${bounds.maxEntries} entries`);
      const destination = join(staging, path);
      if (header.type === "directory") {
        await mkdir(destination, { recursive: true }).catch((error) => mkdirFailed(error, path));
        stats.directories++;
        entry.resume();
      } else if (header.type === "file" || (header.type as string) === "contiguous-file") {
        const size = header.size ?? 0;
        if (size > bounds.maxFileBytes)
          limit(`"${path}" is ${size} bytes, over the ${bounds.maxFileBytes}-byte file limit`);
        if (stats.bytes + size > bounds.maxTotalBytes)
          limit(`the archive is over the ${bounds.maxTotalBytes}-byte limit`);
        await mkdir(dirname(destination), { recursive: true }).catch((error) => mkdirFailed(error, path));
        // "wx": never follow or replace anything already there.
        await pipeline(
          entry,
          createWriteStream(destination, { flags: "wx", mode: (header.mode ?? 0o644) & 0o777 }),
        ).catch((error) => writeFailed(error, path));
        stats.files++;
        stats.bytes += size;
      } else {
        reject(`"${path}" is a ${header.type} entry; only directories and regular files are restored`);
      }
    }
  } catch (error) {
    if (AgentComputerError.is(error)) throw error;
    throw new AgentComputerError("RESTORE_REJECTED", `The archive could not be read: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return stats;
}

function checkEntryPath(name: string, bounds: Required<RestoreLimits>): string {
  if (name.includes("\0")) reject("an entry name holds a NUL byte");
  if (Buffer.byteLength(name) > bounds.maxPathLength) limit(`an entry path is over ${bounds.maxPathLength} bytes`);
  if (name.startsWith("/") || name.includes("\\") || /^[A-Za-z]:/.test(name)) {
    reject(`"${name}" is not a relative POSIX path`);
  }
  const trimmed = name.endsWith("/") ? name.slice(0, -1) : name;
  const segments = trimmed.split("/");
  for (const segment of segments) {
    if (segment === "" || segment === "." || segment === "..") reject(`"${name}" has an empty, "." or ".." segment`);
    if (Buffer.byteLength(segment) > 255) limit(`a name in "${name.slice(0, 64)}..." is over 255 bytes`);
  }
  if (segments.length > bounds.maxDepth) limit(`"${name.slice(0, 64)}..." is deeper than ${bounds.maxDepth} levels`);
  return trimmed;
}

async function swapIn(staging: string, targetDir: string, tag: string): Promise<void> {
  const previous = join(dirname(targetDir), `.${basename(targetDir)}.previous-${tag}`);
  const hadTarget = await stat(targetDir).then(
    () => true,
    () => false,
  );
  if (hadTarget) await rename(targetDir, previous);
  try {
    await rename(staging, targetDir);
  } catch (error) {
    if (hadTarget) await rename(previous, targetDir);
    throw error;
  }
  if (hadTarget) await rm(previous, { recursive: true, force: true });
}

function reject(reason: string): never {
  throw new AgentComputerError("RESTORE_REJECTED", `Restore refused: ${reason}. The previous home is untouched.`);
}

function limit(reason: string): never {
  throw new AgentComputerError("LIMIT_EXCEEDED", `Restore refused: ${reason}. The previous home is untouched.`);
}

function mkdirFailed(error: NodeJS.ErrnoException, path: string): never {
  if (error.code === "EEXIST" || error.code === "ENOTDIR") reject(`"${path}" collides with another entry`);
  throw error;
}

function writeFailed(error: NodeJS.ErrnoException, path: string): never {
  if (error.code === "EEXIST" || error.code === "ENOTDIR" || error.code === "EISDIR") {
    reject(`"${path}" collides with another entry`);
  }
  throw error;
}
