import { closeSync, constants, futimesSync, linkSync, lstatSync, openSync, writeSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { readFully } from "./pack-home.js";
import { matchesEntry } from "./unchanged-file.js";

/**
 * O_EXCL | O_NOFOLLOW: never follow or replace anything already there.
 * Only the staging folder restore-home.ts made is written into.
 */
export const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Files gathered before a batch goes to a writer thread, and its byte budget. */
const BATCH_FILES = 256;
const BATCH_BYTES = 1024 * 1024;
/** Batches sent and not yet written, per thread: bounds the memory a fast archive can queue. */
const IN_FLIGHT_PER_THREAD = 2;
/**
 * One: beside the restoring thread (reading, opening, checking) that fills
 * the two cores of the machines this runs on. Measured on the benches'
 * 20,000 small files (issue 48), a second writer thread gained nothing.
 */
const DEFAULT_THREADS = 1;

interface FileToWrite {
  readonly path: string;
  /** The target's current copy, linked instead when it holds the same file (unchanged-file.ts). */
  readonly previous: string | undefined;
  readonly mode: number;
  readonly mtime: number;
  readonly offset: number;
  readonly length: number;
}

interface Batch {
  readonly buffer: ArrayBuffer;
  readonly files: FileToWrite[];
}

/**
 * The writer threads' code, evaluated from this string so it runs the same
 * from the package's sources and from its bundle (no file path to resolve).
 * It does what `writeFileNow` and `linkedFromPrevious` below do, file after
 * file, and stops at the first error: link the unchanged previous copy, or
 * open O_EXCL, write, set the mtime, close.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { closeSync, constants, futimesSync, linkSync, lstatSync, openSync, readSync, writeSync } = require("node:fs");
const matches = (stat, file) =>
  stat !== undefined && stat.isFile() && stat.size === file.length && (stat.mode & 0o777) === file.mode &&
  Math.round(stat.mtimeMs) === Math.round(file.mtime * 1000);
const linked = (file, data) => {
  try {
    if (!matches(lstatSync(file.previous, { throwIfNoEntry: false }), file)) return false;
    const held = Buffer.allocUnsafe(file.length);
    const fd = openSync(file.previous, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      let done = 0;
      while (done < file.length) {
        const count = readSync(fd, held, done, file.length - done, done);
        if (count === 0) return false;
        done += count;
      }
    } finally {
      closeSync(fd);
    }
    if (!held.equals(data.subarray(file.offset, file.offset + file.length))) return false;
    linkSync(file.previous, file.path);
    return true;
  } catch {
    return false;
  }
};
let failed = false;
parentPort.on("message", ({ id, buffer, files }) => {
  if (failed) return parentPort.postMessage({ id, skipped: true });
  const data = Buffer.from(buffer);
  for (const file of files) {
    if (file.previous !== undefined && linked(file, data)) continue;
    try {
      const fd = openSync(file.path, workerData.flags, file.mode);
      try {
        let written = 0;
        while (written < file.length)
          written += writeSync(fd, data, file.offset + written, file.length - written);
        futimesSync(fd, file.mtime, file.mtime);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      failed = true;
      return parentPort.postMessage({ id, error: { code: error.code, message: error.message } });
    }
  }
  parentPort.postMessage({ id });
});
`;

/** Links the unchanged previous copy on the calling thread, as a writer thread would; false when it is not the same file. */
function linkedFromPrevious(previous: string, path: string, data: Uint8Array, mode: number, mtime: number): boolean {
  try {
    if (!matchesEntry(lstatSync(previous, { throwIfNoEntry: false }), data.length, mode, mtime)) return false;
    const fd = openSync(previous, constants.O_RDONLY | constants.O_NOFOLLOW);
    const held = Buffer.allocUnsafe(data.length);
    try {
      if (readFully(fd, held, 0, data.length) !== data.length) return false;
    } finally {
      closeSync(fd);
    }
    if (!held.equals(data)) return false;
    linkSync(previous, path);
    return true;
  } catch {
    return false;
  }
}

/** Writes one small file on the calling thread, as a writer thread would. */
export function writeFileNow(path: string, data: Uint8Array, mode: number, mtime: number): void {
  const fd = openSync(path, CREATE_FLAGS, mode);
  try {
    let written = 0;
    while (written < data.length) written += writeSync(fd, data, written, data.length - written);
    futimesSync(fd, mtime, mtime);
  } finally {
    closeSync(fd);
  }
}

/**
 * Creates a restore's small files on writer threads, so that the kernel's
 * work per file (open with O_CREAT, write, utimes, close: the cost of a
 * home of many small files, issue 48) runs beside the thread that reads,
 * opens and checks the archive instead of after it, file by file. The
 * caller makes the folders first and checks every path; files are
 * independent of each other, so batches go to the threads in turn.
 * A home with fewer files than one batch is written on the calling thread:
 * no thread is started for it.
 *
 * Whole or nothing with the caller's staging folder: after `abort` (or a
 * failed `finish`) no thread writes anything more, so the folder can be
 * removed.
 */
export class StagingFileWriter {
  private readonly threads: Worker[] = [];
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private readonly inFlight: Promise<void>[] = [];
  private batch: Batch = newBatch(BATCH_BYTES);
  private used = 0;
  private sent = 0;
  private failure: Error | undefined;

  constructor(private readonly threadCount = DEFAULT_THREADS) {}

  /** Queues one file (its bytes are copied); waits when enough batches are already queued. */
  async add(path: string, data: Uint8Array, mode: number, mtime: number, previous?: string): Promise<void> {
    this.throwIfFailed();
    let full: Batch | undefined;
    if (this.used + data.length > this.batch.buffer.byteLength || this.batch.files.length === BATCH_FILES) {
      full = this.batch;
      this.batch = newBatch(Math.max(BATCH_BYTES, data.length));
      this.used = 0;
    }
    // Copied before any wait: the caller's bytes may be a view of a buffer it reuses.
    new Uint8Array(this.batch.buffer, this.used, data.length).set(data);
    this.batch.files.push({ path, previous, mode, mtime, offset: this.used, length: data.length });
    this.used += data.length;
    if (full !== undefined) await this.send(full);
  }

  /** Writes what is queued and waits for every thread; throws the first write's error. */
  async finish(): Promise<void> {
    try {
      if (this.threads.length === 0) this.writeHere(this.batch);
      else if (this.batch.files.length > 0) await this.send(this.batch);
      await Promise.all(this.inFlight);
      this.throwIfFailed();
    } finally {
      await this.abort();
    }
  }

  /** Stops the threads; once this resolves nothing more is written. */
  async abort(): Promise<void> {
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((thread) => thread.terminate()));
    this.failWaiting(new Error("the restore's file writers were stopped"));
  }

  private writeHere(batch: Batch): void {
    const data = Buffer.from(batch.buffer);
    for (const file of batch.files) {
      const bytes = data.subarray(file.offset, file.offset + file.length);
      if (file.previous !== undefined && linkedFromPrevious(file.previous, file.path, bytes, file.mode, file.mtime))
        continue;
      writeFileNow(file.path, bytes, file.mode, file.mtime);
    }
  }

  private async send(batch: Batch): Promise<void> {
    if (this.inFlight.length >= this.threadCount * IN_FLIGHT_PER_THREAD) await this.inFlight.shift();
    this.throwIfFailed();
    if (this.threads.length === 0) this.start();
    const id = this.sent++;
    const thread = this.threads[id % this.threads.length] as Worker;
    const written = new Promise<void>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    written.catch(() => {}); // failures are kept in `failure` and thrown from add or finish
    this.inFlight.push(written);
    thread.postMessage({ id, buffer: batch.buffer, files: batch.files }, [batch.buffer]);
  }

  private start(): void {
    for (let i = 0; i < this.threadCount; i++) {
      const thread = new Worker(WORKER_SOURCE, { eval: true, workerData: { flags: CREATE_FLAGS } });
      thread.on("message", (reply: { id: number; error?: { code?: string; message: string }; skipped?: boolean }) =>
        this.settle(reply),
      );
      thread.on("error", (error) => {
        this.fail(error);
        this.failWaiting(error);
      });
      this.threads.push(thread);
    }
  }

  private settle(reply: { id: number; error?: { code?: string; message: string }; skipped?: boolean }): void {
    const waiter = this.waiting.get(reply.id);
    this.waiting.delete(reply.id);
    if (reply.error !== undefined) {
      const error = Object.assign(new Error(reply.error.message), { code: reply.error.code });
      this.fail(error);
      waiter?.reject(error);
      return;
    }
    if (reply.skipped) waiter?.reject(this.failure ?? new Error("a file writer stopped"));
    else waiter?.resolve();
  }

  private fail(error: Error): void {
    this.failure ??= error;
  }

  private failWaiting(error: Error): void {
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

function newBatch(bytes: number): Batch {
  return { buffer: new ArrayBuffer(bytes), files: [] };
}
