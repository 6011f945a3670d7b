import type { ByteSource } from "./byte-source.js";
import { refuseRestore, shown } from "./restore-refusal.js";
import { padding } from "./tar-header.js";
import { MAX_MTIME_SECONDS, readTarHeader, type TarEntryHeader } from "./tar-reader.js";

/** A directory or regular file of a home given as entries, not as a tar (`stageHomeEntries`). */
export type HomeEntry =
  | { readonly kind: "directory"; readonly path: string; readonly mode: number; readonly mtime: number }
  | {
      readonly kind: "file";
      readonly path: string;
      readonly mode: number;
      /** Seconds since the epoch. */
      readonly mtime: number;
      readonly size: number;
    };

/**
 * What `stageHomeEntries` reads: each entry, parents before children, a
 * file's entry followed by its bytes in pieces that add up to its size.
 */
export type HomeEntryItem = HomeEntry | Uint8Array;

/**
 * What the restore reads (restore-home.ts): entry headers, and after a
 * file's header exactly its size in data. One reader parses a tar; the
 * other takes entries as they are, which saves a store that has them (a
 * chunked checkpoint's manifest) writing a tar only for it to be parsed
 * again (issue 48: a third of the main thread's time in a restore of
 * 20,000 small files). Both go through the same checks after this.
 */
export interface EntryReader {
  /** The next entry's header, its path not yet checked, or "end". */
  next(): Promise<TarEntryHeader | "end">;
  /** Exactly `n` bytes of the current file's data, or undefined when the input ends first. */
  read(n: number): Promise<Buffer | undefined>;
  /** Up to `n` bytes (at least one) of it, or undefined when the input ends first. */
  readSome(n: number): Promise<Buffer | undefined>;
  /** Passes what follows a file's `size` bytes of data (a tar's padding); false when the input ended first. */
  skipAfterData(size: number): Promise<boolean>;
  /** Stops reading; the input's own clean-up runs. */
  close(): Promise<void>;
}

/** Entries as a tar states them (tar-reader.ts). */
export class TarEntryReader implements EntryReader {
  constructor(private readonly source: ByteSource) {}

  next(): Promise<TarEntryHeader | "end"> {
    return readTarHeader(this.source);
  }

  read(n: number): Promise<Buffer | undefined> {
    return this.source.read(n);
  }

  readSome(n: number): Promise<Buffer | undefined> {
    return this.source.readSome(n);
  }

  async skipAfterData(size: number): Promise<boolean> {
    const pad = padding(size);
    return pad === 0 || (await this.source.read(pad)) !== undefined;
  }

  close(): Promise<void> {
    return this.source.close();
  }
}

/**
 * Entries given as `HomeEntryItem`s. Each is checked for its shape here
 * (what a tar header's syntax guarantees the tar reader), and data where an
 * entry belongs, or an entry where data belongs, is refused as a
 * malformed tar is.
 */
export class ItemEntryReader implements EntryReader {
  private readonly iterator: AsyncIterator<HomeEntryItem>;
  private piece: Buffer | undefined;
  private head = 0;
  private last = "";

  constructor(items: AsyncIterable<HomeEntryItem>) {
    this.iterator = items[Symbol.asyncIterator]();
  }

  async next(): Promise<TarEntryHeader | "end"> {
    if (this.piece !== undefined) refuseRestore(`the data of "${shown(this.last)}" does not match its size`);
    for (;;) {
      const step = await this.iterator.next();
      if (step.done) return "end";
      const item = step.value;
      if (item instanceof Uint8Array) {
        if (item.length === 0) continue;
        refuseRestore(`data follows "${shown(this.last)}" beyond its size`);
      }
      this.last = typeof item?.path === "string" ? item.path : "";
      return headerOf(item);
    }
  }

  async read(n: number): Promise<Buffer | undefined> {
    if (n === 0) return Buffer.alloc(0);
    const first = await this.pieceOf(n);
    if (first === undefined || first.length === n) return first;
    const out = Buffer.allocUnsafe(n);
    first.copy(out);
    let filled = first.length;
    while (filled < n) {
      const more = await this.pieceOf(n - filled);
      if (more === undefined) return undefined;
      more.copy(out, filled);
      filled += more.length;
    }
    return out;
  }

  readSome(n: number): Promise<Buffer | undefined> {
    return this.pieceOf(n);
  }

  async skipAfterData(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    await this.iterator.return?.();
  }

  /**
   * Up to `n` bytes of the current piece, the next one taken when it is
   * spent; undefined at the end or at an entry (the data is cut short,
   * which the restore refuses).
   */
  private async pieceOf(n: number): Promise<Buffer | undefined> {
    while (this.piece === undefined) {
      const step = await this.iterator.next();
      if (step.done) return undefined;
      if (!(step.value instanceof Uint8Array)) return undefined;
      if (step.value.length > 0) this.piece = asBuffer(step.value);
    }
    const piece = this.piece;
    const count = Math.min(n, piece.length - this.head);
    const out = piece.subarray(this.head, this.head + count);
    this.head += count;
    if (this.head === piece.length) {
      this.piece = undefined;
      this.head = 0;
    }
    return out;
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** An entry's header, or a refusal when it is not a directory or regular file of a sound shape. */
function headerOf(entry: HomeEntry): TarEntryHeader {
  const { kind, path, mode, mtime } = entry ?? {};
  if (kind !== "file" && kind !== "directory") refuseRestore("an entry is neither a file nor a directory");
  if (typeof path !== "string") refuseRestore("an entry has no path");
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) refuseRestore(`"${shown(path)}" has no valid mode`);
  if (typeof mtime !== "number" || !(Math.abs(mtime) <= MAX_MTIME_SECONDS))
    refuseRestore(`"${shown(path)}" has no valid mtime`);
  if (kind === "directory") return { path, kind, other: "", size: 0, mode, mtime };
  const { size } = entry as { size: unknown };
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0)
    refuseRestore(`"${shown(path)}" has no valid size`);
  return { path, kind, other: "", size, mode, mtime };
}
