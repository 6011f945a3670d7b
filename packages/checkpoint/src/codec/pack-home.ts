import {
  type BigIntStats,
  closeSync,
  constants,
  type Dirent,
  existsSync,
  fstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
} from "node:fs";
import { Readable } from "node:stream";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import { z } from "zod";
import { type DataRunsOptions, DEFAULT_SEEKER, findDataRuns, readAt } from "./data-runs.js";
import type { PackOptions } from "./pack-options.js";
import type { PackStats } from "./pack-stats.js";
import type { PackedHome } from "./packed-home.js";
import { type DataRun, encodeSparseMap } from "./sparse-map.js";
import { BLOCK, headerBytesFor, padding, type TarHeaderFields, writeTarHeader } from "./tar-header.js";

/**
 * Why this is not `tar-stream`'s pack fed by `fs.createReadStream` (which
 * managed about 1/25 of GNU tar on 20,000 small files here): every file cost
 * a stream object, four thread-pool round trips and three tiny chunks, each
 * handed on through its own promise. Here small files are read with
 * synchronous calls straight into one shared 1 MiB batch, header, data and
 * padding together, and the batch is handed on whole; only large files are
 * read asynchronously, 1 MiB at a time. A batch bounds how long the event
 * loop is held (about a millisecond from the page cache).
 */
const BATCH = 1024 * 1024;
const SMALL_FILE = 256 * 1024;
const READ_CHUNK = 1024 * 1024;
/** Sparse detection: files over 1 MiB missing over 64 KiB of blocks (data-runs.ts finds where). */
const SPARSE_MIN_SIZE = 1024 * 1024;
const SPARSE_SEGMENT = 64 * 1024;
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const DIR_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY;
/**
 * Linux names every open descriptor here. A folder is walked through the
 * descriptor it was opened as (`/proc/self/fd/<fd>/<name>`), the way
 * `openat` would: a bot that swaps a folder of its live home for a link
 * after it was listed cannot steer the walk out of the home, because no
 * path is resolved again from the top (docs/architecture.md §8).
 */
const FD_DIR = "/proc/self/fd";
const walkByDescriptor = existsSync(FD_DIR);

/**
 * Names Chromium rewrites or locks while it runs; restoring them would make a
 * profile look in use or carry stale caches. Left out only inside
 * `.browser-profiles/<profile>/`, kept everywhere else.
 */
export const TRANSIENT_PROFILE_NAMES: readonly string[] = [
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
];
const transientNames = new Set(TRANSIENT_PROFILE_NAMES);

/** True for a home-relative path that is a transient browser-profile file or folder. */
export function isTransientProfilePath(relativePath: string): boolean {
  if (!relativePath.startsWith(".browser-profiles/")) return false;
  const parts = relativePath.split("/");
  if (parts[0] !== ".browser-profiles" || parts.length < 3) return false;
  return parts.slice(2).some((part) => transientNames.has(part));
}

const packArgsSchema = z.object({
  dir: z.string().min(1, "a home folder"),
  options: z
    .object({
      include: z
        .custom<(path: string) => boolean>((v) => typeof v === "function", { message: "expected a function" })
        .optional(),
      reuse: z
        .custom<NonNullable<PackOptions["reuse"]>>((v) => typeof v === "function", { message: "expected a function" })
        .optional(),
    })
    .strict(),
});

/**
 * Packs the home at `dir` as one tar stream (POSIX ustar, pax records for
 * long paths and files of 8 GiB or more) of directories and regular files,
 * depth first with names in code-unit order, so the same tree gives the same
 * archive. Links, sockets, FIFOs and devices are skipped and counted; links
 * are never followed. Memory stays bounded: at most one batch and one read
 * chunk are held, and the stream waits for its reader.
 */
export function packHome(dir: string, options: PackOptions = {}): PackedHome {
  const args = parseInput(packArgsSchema, { dir, options }, "packHome arguments");
  const stats: PackStats = {
    files: 0,
    directories: 0,
    bytes: 0,
    skipped: { symlinks: 0, sockets: 0, fifos: 0, devices: 0 },
    transient: 0,
    changed: 0,
    sparse: 0,
    reused: 0,
  };
  let settle!: { resolve: (s: PackStats) => void; reject: (e: unknown) => void };
  const done = new Promise<PackStats>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // The stream carries the error to its reader; keep the promise from being
  // reported as unhandled when nobody awaits the stats.
  done.catch(() => {});
  // Destroying the stream must stop the work at once (issue 45, finding 4):
  // Readable.from only calls the generator's return() once it reaches a
  // yield, and finding a big file's holes can await for long without one.
  const stop = new AbortController();
  const packer = new Packer(args.dir, args.options.include ?? (() => true), args.options.reuse, stats, {
    signal: stop.signal,
    seeker: DEFAULT_SEEKER,
  });
  async function* produce(): AsyncGenerator<Buffer> {
    let finished = false;
    try {
      yield* packer.run();
      finished = true;
      settle.resolve(stats);
    } catch (error) {
      const failure = asPackError(error, args.dir);
      settle.reject(failure);
      throw failure;
    } finally {
      if (!finished)
        settle.reject(new AgentComputerError("ABORTED", "The home archive was closed before it was complete."));
      await packer.close();
    }
  }
  // One Buffer per batch, so the per-chunk cost of Readable.from is paid once
  // per MiB. A high-water mark of one byte keeps a single batch buffered: with
  // two, a reader's read() would concatenate (copy) them.
  const tar = Readable.from(produce(), { objectMode: false, highWaterMark: 1 });
  const destroyIterator = tar._destroy;
  tar._destroy = (error, callback) => {
    stop.abort();
    destroyIterator.call(tar, error, callback);
  };
  return { tar, stats: done };
}

class Packer {
  private batch = Buffer.allocUnsafe(BATCH);
  private used = 0;
  private readonly openHandles = new Set<number>();
  private rootReal: string | undefined;

  constructor(
    private readonly root: string,
    private readonly include: (path: string) => boolean,
    private readonly reuse: PackOptions["reuse"],
    private readonly stats: PackStats,
    private readonly dataRuns: DataRunsOptions,
  ) {}

  async *run(): AsyncGenerator<Buffer> {
    const root = this.openFolder(this.root);
    if (root === undefined)
      throw new AgentComputerError("NOT_FOUND", `The home folder ${this.root} does not exist or is not a folder.`);
    if (walkByDescriptor) this.rootReal = readlinkSync(root.path);
    try {
      yield* this.walk(root, "");
    } finally {
      this.closeFolder(root);
    }
    // The end-of-archive marker: two zero blocks.
    yield* this.reserve(2 * BLOCK);
    this.batch.fill(0, this.used, this.used + 2 * BLOCK);
    this.used += 2 * BLOCK;
    if (this.used > 0) yield this.takeBatch();
  }

  async close(): Promise<void> {
    for (const fd of this.openHandles) closeSync(fd);
    this.openHandles.clear();
  }

  /** Where to reach `name` inside the folder open as `folder`, without resolving the folder's path again. */
  private childPath(folder: Folder, name: string): string {
    return `${folder.path}/${name}`;
  }

  /** Opens a folder that is not a link (O_NOFOLLOW | O_DIRECTORY); undefined when it is gone or no folder now. */
  private openFolder(path: string): Folder | undefined {
    let fd: number;
    try {
      fd = openSync(path, DIR_FLAGS);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return undefined;
      throw error;
    }
    this.openHandles.add(fd);
    return { fd, path: walkByDescriptor ? `${FD_DIR}/${fd}` : path };
  }

  private closeFolder(folder: Folder): void {
    this.openHandles.delete(folder.fd);
    closeSync(folder.fd);
  }

  private async *walk(folder: Folder, relative: string): AsyncGenerator<Buffer> {
    // Synchronous like the file reads: one directory listing is bounded
    // work, and a thread-pool round trip per directory showed as idle time.
    const entries: Dirent[] = readdirSync(folder.path, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const rel = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (!this.include(rel)) continue;
      if (isTransientProfilePath(rel)) {
        this.stats.transient++;
        continue;
      }
      const child = this.childPath(folder, entry.name);
      if (entry.isDirectory()) yield* this.packFolder(child, rel);
      else if (entry.isFile()) yield* this.packFile(child, rel);
      else if (entry.isSymbolicLink()) this.stats.skipped.symlinks++;
      else if (entry.isSocket()) this.stats.skipped.sockets++;
      else if (entry.isFIFO()) this.stats.skipped.fifos++;
      else this.stats.skipped.devices++;
    }
  }

  private async *packFolder(path: string, rel: string): AsyncGenerator<Buffer> {
    const folder = this.openFolder(path);
    if (folder === undefined) {
      // Swapped for a link or removed since it was listed: nothing to follow.
      this.stats.changed++;
      return;
    }
    try {
      if (walkByDescriptor && !this.stillInside(folder)) {
        this.stats.changed++;
        return;
      }
      const info = fstatSync(folder.fd);
      yield* this.writeHeader({ path: rel, kind: "directory", mode: info.mode, size: 0, mtime: info.mtimeMs / 1000 });
      this.stats.directories++;
      yield* this.walk(folder, rel);
    } finally {
      this.closeFolder(folder);
    }
  }

  /**
   * Defence in depth: the folder opened is under the home the walk started
   * from, by the kernel's own name for the descriptor. A folder moved out of
   * the home while packing is skipped as changed.
   */
  private stillInside(folder: Folder): boolean {
    const real = readlinkSync(folder.path);
    return this.rootReal !== undefined && (real === this.rootReal || real.startsWith(`${this.rootReal}/`));
  }

  private async *packFile(abs: string, rel: string): AsyncGenerator<Buffer> {
    let fd: number;
    try {
      // O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or FIFO since
      // readdir is neither followed nor waited on; fstat below says what it is.
      fd = openSync(abs, OPEN_FLAGS);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") this.stats.changed++;
      else if (code === "ELOOP") this.stats.skipped.symlinks++;
      else throw error;
      return;
    }
    this.openHandles.add(fd);
    try {
      const stamped = this.reuse ? fstatSync(fd, { bigint: true }) : undefined;
      const info = stamped ? numbersOf(stamped) : fstatSync(fd);
      if (!info.isFile()) {
        this.stats.changed++;
        return;
      }
      if (stamped && this.reuse?.(rel, stamped)) {
        this.stats.reused++;
        return;
      }
      const size = info.size;
      if (mayBeSparse(info)) {
        const runs = await findDataRuns(fd, size, info.blocks * 512, rel, this.dataRuns);
        const data = runs.reduce((sum, run) => sum + run.length, 0);
        if (data < size) {
          yield* this.packSparseFile(fd, rel, info, runs, data);
          this.stats.files++;
          this.stats.bytes += data;
          this.stats.sparse++;
          return;
        }
      }
      yield* this.writeHeader({ path: rel, kind: "file", mode: info.mode, size, mtime: info.mtimeMs / 1000 });
      if (size <= SMALL_FILE) {
        yield* this.reserve(size + padding(size));
        const got = readFully(fd, this.batch, this.used, size);
        if (got < size) this.stats.changed++;
        this.batch.fill(0, this.used + got, this.used + size + padding(size));
        this.used += size + padding(size);
      } else yield* this.packLargeFile(fd, size);
      this.stats.files++;
      this.stats.bytes += size;
    } finally {
      this.openHandles.delete(fd);
      closeSync(fd);
    }
  }

  private async *packLargeFile(fd: number, size: number): AsyncGenerator<Buffer> {
    if (this.used > 0) yield this.takeBatch();
    let left = size;
    let shrunk = false;
    while (left > 0) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, left));
      const bytesRead = shrunk ? 0 : await readAt(fd, chunk, size - left);
      if (bytesRead === 0) {
        // Shrunk while packing: pad with zeros to the size the header states.
        if (!shrunk) this.stats.changed++;
        shrunk = true;
        chunk.fill(0);
        left -= chunk.length;
        yield chunk;
        continue;
      }
      left -= bytesRead;
      yield bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead);
    }
    const pad = padding(size);
    if (pad > 0) {
      yield* this.reserve(pad);
      this.batch.fill(0, this.used, this.used + pad);
      this.used += pad;
    }
  }

  /** A file with holes: its map, then only its data runs (sparse-map.ts); the holes stay holes. */
  private async *packSparseFile(
    fd: number,
    rel: string,
    info: { mode: number; mtimeMs: number; size: number },
    runs: DataRun[],
    data: number,
  ): AsyncGenerator<Buffer> {
    const map = encodeSparseMap(runs);
    const entrySize = map.length + data;
    yield* this.writeHeader({
      path: rel,
      kind: "file",
      mode: info.mode,
      size: entrySize,
      mtime: info.mtimeMs / 1000,
      sparse: { realSize: info.size },
    });
    if (this.used > 0) yield this.takeBatch();
    yield map;
    for (const run of runs) {
      let done = 0;
      while (done < run.length) {
        // Zero-filled: a file that shrank while packing gives zeros to the length the map states.
        const chunk = Buffer.alloc(Math.min(READ_CHUNK, run.length - done));
        if ((await readAt(fd, chunk, run.offset + done)) < chunk.length) this.stats.changed++;
        done += chunk.length;
        yield chunk;
      }
    }
    const pad = padding(entrySize);
    if (pad > 0) {
      yield* this.reserve(pad);
      this.batch.fill(0, this.used, this.used + pad);
      this.used += pad;
    }
  }

  private *writeHeader(fields: TarHeaderFields): Generator<Buffer> {
    yield* this.reserve(headerBytesFor(fields.path));
    this.used += writeTarHeader(fields, this.batch, this.used);
  }

  /** Makes room for `bytes` in the batch, handing on the full one first. */
  private *reserve(bytes: number): Generator<Buffer> {
    if (this.used + bytes <= this.batch.length) return;
    if (this.used > 0) yield this.takeBatch();
    if (bytes > this.batch.length) this.batch = Buffer.allocUnsafe(bytes);
  }

  private takeBatch(): Buffer {
    const full = this.batch.subarray(0, this.used);
    this.batch = Buffer.allocUnsafe(BATCH);
    this.used = 0;
    return full;
  }
}

/** What packFile reads of a file's stat, from the exact (bigint) one `reuse` is given. */
function numbersOf(stat: BigIntStats) {
  return {
    isFile: () => stat.isFile(),
    size: Number(stat.size),
    mode: Number(stat.mode),
    mtimeMs: Number(stat.mtimeNs) / 1e6,
    blocks: Number(stat.blocks),
  };
}

/** Files whose allocated blocks fall well short of their size have holes worth keeping. */
function mayBeSparse(info: { size: number; blocks: number }): boolean {
  return info.size > SPARSE_MIN_SIZE && info.blocks * 512 < info.size - SPARSE_SEGMENT;
}

/** A folder open for the walk: its descriptor, and the path that reaches it through that descriptor. */
interface Folder {
  fd: number;
  path: string;
}

/** Reads up to `length` bytes from the descriptor's position into `target` at `offset`; fewer only at the end of the file. */
export function readFully(fd: number, target: Buffer, offset: number, length: number): number {
  let got = 0;
  while (got < length) {
    const n = readSync(fd, target, offset + got, length - got, null);
    if (n === 0) break;
    got += n;
  }
  return got;
}

function asPackError(error: unknown, dir: string): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const code = (error as NodeJS.ErrnoException)?.code;
  const path = (error as NodeJS.ErrnoException)?.path;
  return new AgentComputerError(
    "UNAVAILABLE",
    `Packing the home ${dir} failed at ${path ?? "?"} (${code ?? (error as Error)?.message}); nothing was saved.`,
    { cause: error, retryable: code === "EAGAIN" || code === "EBUSY" },
  );
}
