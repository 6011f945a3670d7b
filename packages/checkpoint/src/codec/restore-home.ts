import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import { z } from "zod";
import { ByteSource } from "./byte-source.js";
import { type EntryReader, type HomeEntryItem, ItemEntryReader, TarEntryReader } from "./entry-reader.js";
import { HomeEntryRules } from "./home-entry-rules.js";
import { DEFAULT_RESTORE_LIMITS, type RestoreLimits, restoreLimitsSchema } from "./restore-limits.js";
import { refuseRestore, shown } from "./restore-refusal.js";
import type { RestoreStats } from "./restore-stats.js";
import { readSparseMap } from "./sparse-map.js";
import type { StagedHome } from "./staged-home.js";
import { CREATE_FLAGS, StagingFileWriter } from "./staging-file-writer.js";
import { copyPrefix, holdsAt, linkPrevious, openUnchanged } from "./unchanged-file.js";

/**
 * Files up to this size are read whole and handed to the staging writer
 * (staging-file-writer.ts), which creates them in batches on writer threads:
 * for a home of many small files the kernel's work per file, not the
 * bytes, is the cost, and it then runs beside the reading and checking.
 */
const SMALL_FILE = 1024 * 1024;
const WRITE_CHUNK = 1024 * 1024;

const targetSchema = z.string().min(1, "a target folder");

/**
 * Restores a home tar into `targetDir`, whole or not at all: the entries are
 * checked and written into a staging folder beside the target, which then
 * replaces it. On any refusal (RESTORE_REJECTED, LIMIT_EXCEEDED,
 * CHECKPOINT_CORRUPT from a sealed stream) the target is exactly as before
 * and the staging folder is gone. A second restore of a target while one is
 * staged or swapping in this process is CONFLICT and touches nothing
 * (across processes, callers serialise them: the home stores do).
 */
export async function restoreHome(
  tarStream: AsyncIterable<Uint8Array>,
  targetDir: string,
  limits: RestoreLimits = {},
): Promise<RestoreStats> {
  return swapInStaged(await stageHome(tarStream, targetDir, limits));
}

/**
 * `restoreHome` for a home given as entries (`HomeEntryItem`: each entry,
 * a file's followed by its bytes) rather than a tar, with the same checks,
 * limits and whole-or-nothing swap: for a caller that holds the entries
 * already, such as a chunked checkpoint's manifest, so no tar is written
 * only to be parsed again.
 */
export async function restoreHomeEntries(
  entries: AsyncIterable<HomeEntryItem>,
  targetDir: string,
  limits: RestoreLimits = {},
): Promise<RestoreStats> {
  return swapInStaged(await stageHomeEntries(entries, targetDir, limits));
}

async function swapInStaged(staged: StagedHome): Promise<RestoreStats> {
  try {
    await staged.swapIn();
  } catch (error) {
    await staged.discard();
    throw error;
  }
  return staged.stats;
}

/** How `stageHome` stages. */
export interface StageHomeOptions {
  /**
   * Hard-links each file the target already holds with the same bytes, mode
   * and mtime instead of writing it again (every byte still compared), so a
   * home with few changes stages and swaps in at the cost of reading it.
   * Only for a target no one but the caller writes, such as a store's own
   * copy of a home: until the swap the two copies share those files. Not
   * for a live home a computer mounts.
   */
  readonly linkUnchanged?: boolean;
}

/**
 * The first half of `restoreHome`: extracts and checks the whole archive into
 * a staging folder beside `targetDir` and stops before anything is visible.
 * Also finishes or rolls back a swap that a crash interrupted earlier.
 */
export async function stageHome(
  tarStream: AsyncIterable<Uint8Array>,
  targetDir: string,
  limits: RestoreLimits = {},
  options: StageHomeOptions = {},
): Promise<StagedHome> {
  checkIterable(tarStream, "tar stream");
  return stageFrom(() => new TarEntryReader(new ByteSource(tarStream)), targetDir, limits, options);
}

/** `stageHome` for a home given as entries (`restoreHomeEntries`). */
export async function stageHomeEntries(
  entries: AsyncIterable<HomeEntryItem>,
  targetDir: string,
  limits: RestoreLimits = {},
  options: StageHomeOptions = {},
): Promise<StagedHome> {
  checkIterable(entries, "entry stream");
  return stageFrom(() => new ItemEntryReader(entries), targetDir, limits, options);
}

function checkIterable(input: unknown, what: string): void {
  if (typeof (input as AsyncIterable<unknown>)?.[Symbol.asyncIterator] !== "function")
    throw new AgentComputerError("INVALID_ARGUMENT", `Invalid ${what}: expected a Readable or an async iterable.`);
}

async function stageFrom(
  reader: () => EntryReader,
  targetDir: string,
  limits: RestoreLimits,
  options: StageHomeOptions,
): Promise<StagedHome> {
  const target = resolve(parseInput(targetSchema, targetDir, "restore target"));
  const bounds = { ...DEFAULT_RESTORE_LIMITS, ...parseInput(restoreLimitsSchema, limits, "RestoreLimits") };
  claimTarget(target);
  try {
    return await stageClaimed(reader(), target, bounds, options.linkUnchanged === true);
  } catch (error) {
    restoring.delete(target);
    throw error;
  }
}

/**
 * Targets with a restore staged, not yet swapped in, discarded or detached,
 * in this process: a second restore of one is CONFLICT, because its cleanup
 * of leftovers would remove the first one's staging folder.
 */
const restoring = new Set<string>();

function claimTarget(target: string): void {
  if (restoring.has(target)) {
    throw new AgentComputerError(
      "CONFLICT",
      `Another restore of ${target} is in progress; wait for it to finish, then restore again.`,
      { details: { target } },
    );
  }
  restoring.add(target);
}

async function stageClaimed(
  source: EntryReader,
  target: string,
  bounds: Required<RestoreLimits>,
  linkUnchanged: boolean,
): Promise<StagedHome> {
  await recoverInterruptedRestore(target);
  const reuseFrom = linkUnchanged && (await isDirectory(target)) ? target : undefined;
  const parent = dirname(target);
  const tag = randomBytes(6).toString("hex");
  const staging = join(parent, `.${basename(target)}.restore-${tag}`);
  await mkdir(parent, { recursive: true });
  await mkdir(staging, { mode: 0o700 });
  let stats: RestoreStats;
  try {
    stats = await extractInto(source, staging, bounds, reuseFrom);
  } catch (error) {
    await source.close().catch(() => {});
    await rm(staging, { recursive: true, force: true });
    throw asRestoreError(error);
  }
  let state: "staged" | "swapped" | "discarded" | "detached" = "staged";
  return {
    stats,
    stagingDir: staging,
    async swapIn() {
      if (state !== "staged") throw new AgentComputerError("CONFLICT", `This staged home was already ${state}.`);
      try {
        await swap(staging, target, tag);
      } catch (error) {
        throw asRestoreError(error);
      } finally {
        restoring.delete(target);
      }
      state = "swapped";
    },
    async discard() {
      if (state !== "staged") return;
      state = "discarded";
      restoring.delete(target);
      await rm(staging, { recursive: true, force: true });
    },
    detach() {
      if (state !== "staged") throw new AgentComputerError("CONFLICT", `This staged home was already ${state}.`);
      state = "detached";
      restoring.delete(target);
      return staging;
    },
  };
}

/**
 * Puts right what a crash (kill -9, power cut) in the middle of a swap left
 * beside `targetDir`: when the target is missing but its previous copy is
 * there, the previous copy comes back; leftover staging folders and
 * previous copies are removed. `restoreHome` and the home stores call this
 * first; call it yourself before reading a home after a crash.
 */
export async function recoverInterruptedRestore(targetDir: string): Promise<void> {
  const target = resolve(parseInput(targetSchema, targetDir, "restore target"));
  const parent = dirname(target);
  const names = await readdir(parent).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [] as string[];
    throw error;
  });
  const base = basename(target);
  let present = await exists(target);
  for (const name of names.filter((n) => n.startsWith(`.${base}.previous-`))) {
    if (!present) {
      // Crashed between the two renames: the new copy never became the home.
      await rename(join(parent, name), target);
      present = true;
    } else await rm(join(parent, name), { recursive: true, force: true });
  }
  for (const name of names.filter((n) => n.startsWith(`.${base}.restore-`))) {
    await rm(join(parent, name), { recursive: true, force: true });
  }
  // Staged folders a caller moved away (a home store parks them) are not ours to track.
}

/**
 * Replaces `targetDir` with a complete folder beside it (rename, then remove
 * the old copy), as `StagedHome.swapIn` does. For a home store that parked a
 * staged home across a crash and now finishes its swap.
 */
export function swapStagedDir(stagingDir: string, targetDir: string): Promise<void> {
  return swap(resolve(stagingDir), resolve(targetDir), randomBytes(6).toString("hex"));
}

async function swap(staging: string, target: string, tag: string): Promise<void> {
  const previous = join(dirname(target), `.${basename(target)}.previous-${tag}`);
  const hadTarget = await exists(target);
  if (hadTarget) await rename(target, previous);
  try {
    await rename(staging, target);
  } catch (error) {
    if (hadTarget) await rename(previous, target);
    throw error;
  }
  if (hadTarget) await rm(previous, { recursive: true, force: true });
}

/**
 * Every entry checked, then written into `staging`: folders at once, small
 * files through the writer's threads, which have all finished (or been
 * stopped, on any refusal or error) when this returns.
 */
async function extractInto(
  source: EntryReader,
  staging: string,
  bounds: Required<RestoreLimits>,
  reuseFrom: string | undefined,
): Promise<RestoreStats> {
  const writer = new StagingFileWriter();
  try {
    const stats = await extractEntries(source, staging, bounds, writer, reuseFrom);
    await writer.finish();
    return stats;
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

async function extractEntries(
  source: EntryReader,
  staging: string,
  bounds: Required<RestoreLimits>,
  writer: StagingFileWriter,
  reuseFrom: string | undefined,
): Promise<RestoreStats> {
  const stats: RestoreStats = { files: 0, directories: 0, bytes: 0 };
  // Every entry is admitted before the disk is touched for it.
  const rules = new HomeEntryRules(bounds);
  for (;;) {
    const header = await source.next();
    if (header === "end") return stats;
    const { path, implied, wasImplied } = rules.admit(header);
    for (const parent of implied) mkdirSync(join(staging, parent), { mode: 0o755 });
    const destination = join(staging, path);
    if (header.kind === "directory") {
      // The owner keeps write access, or the rest of the restore (and cleanup) could not proceed.
      const mode = (header.mode & 0o777) | 0o700;
      if (wasImplied) chmodSync(destination, mode);
      else mkdirSync(destination, { mode });
      stats.directories++;
      continue;
    }
    if (header.sparse)
      await writeSparseFile(
        source,
        destination,
        header.size,
        header.sparse.realSize,
        header.mode & 0o777,
        header.mtime,
        path,
      );
    else {
      const previous = reuseFrom === undefined ? undefined : join(reuseFrom, path);
      await writeFile(source, writer, destination, header.size, header.mode & 0o777, header.mtime, path, previous);
    }
    stats.files++;
    stats.bytes += header.size;
  }
}

async function writeFile(
  source: EntryReader,
  writer: StagingFileWriter,
  destination: string,
  size: number,
  mode: number,
  mtime: number,
  path: string,
  previous: string | undefined,
): Promise<void> {
  if (size <= SMALL_FILE) {
    // The data and its padding read apart: the data is then most often a
    // view of what the stream gave, not a copy gathered across two pieces.
    const data = await source.read(size);
    if (data === undefined) refuseRestore(`the archive is truncated inside "${shown(path)}"`);
    if (!(await source.skipAfterData(size))) refuseRestore(`the archive is truncated after "${shown(path)}"`);
    await writer.add(destination, data, mode, mtime, previous);
    return;
  }
  // With a previous copy that may be the same file, nothing is written until a byte differs (unchanged-file.ts).
  const same = previous === undefined ? undefined : await openUnchanged(previous, size, mode, mtime);
  let handle = same === undefined ? await open(destination, CREATE_FLAGS, mode) : undefined;
  try {
    let position = 0;
    while (position < size) {
      const chunk = await source.readSome(Math.min(size - position, WRITE_CHUNK));
      if (chunk === undefined) refuseRestore(`the archive is truncated inside "${shown(path)}"`);
      if (handle === undefined && !(await holdsAt(same as FileHandle, chunk, position))) {
        handle = await open(destination, CREATE_FLAGS, mode);
        await copyPrefix(same as FileHandle, handle, position);
      }
      let written = 0;
      while (handle !== undefined && written < chunk.length)
        written += (await handle.write(chunk, written)).bytesWritten;
      position += chunk.length;
    }
    if (!(await source.skipAfterData(size))) refuseRestore(`the archive is truncated after "${shown(path)}"`);
    if (handle === undefined && !(await linkPrevious(previous as string, destination))) {
      handle = await open(destination, CREATE_FLAGS, mode);
      await copyPrefix(same as FileHandle, handle, size);
    }
    await handle?.utimes(mtime, mtime);
  } finally {
    await handle?.close();
    await same?.close();
  }
}

/** A sparse entry: its map, then each data run written at its offset; the rest stays holes. */
async function writeSparseFile(
  source: EntryReader,
  destination: string,
  entrySize: number,
  realSize: number,
  mode: number,
  mtime: number,
  path: string,
): Promise<void> {
  const { runs } = await readSparseMap(source, entrySize, realSize, shown(path));
  const handle = await open(destination, CREATE_FLAGS, mode);
  try {
    for (const run of runs) {
      let left = run.length;
      let position = run.offset;
      while (left > 0) {
        const chunk = await source.readSome(Math.min(left, WRITE_CHUNK));
        if (chunk === undefined) refuseRestore(`the archive is truncated inside "${shown(path)}"`);
        let written = 0;
        while (written < chunk.length)
          written += (await handle.write(chunk, written, chunk.length - written, position + written)).bytesWritten;
        left -= chunk.length;
        position += chunk.length;
      }
    }
    await handle.truncate(realSize);
    if (!(await source.skipAfterData(entrySize))) refuseRestore(`the archive is truncated after "${shown(path)}"`);
    await handle.utimes(mtime, mtime);
  } finally {
    await handle.close();
  }
}

function asRestoreError(error: unknown): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const code = (error as NodeJS.ErrnoException)?.code;
  return new AgentComputerError(
    "UNAVAILABLE",
    `Restore failed before the swap (${code ?? (error as Error)?.message ?? "unknown error"}); the previous home is untouched.`,
    { cause: error },
  );
}

async function isDirectory(path: string): Promise<boolean> {
  return lstat(path).then(
    (stat) => stat.isDirectory(),
    () => false,
  );
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return false;
      throw error;
    },
  );
}
