import { Readable } from "node:stream";
import { parseInput } from "@agent-computer/core";
import { ByteSource } from "./byte-source.js";
import { HomeEntryRules } from "./home-entry-rules.js";
import { DEFAULT_RESTORE_LIMITS, type RestoreLimits, restoreLimitsSchema } from "./restore-limits.js";
import { refuseRestore, shown } from "./restore-refusal.js";
import { readSparseMap } from "./sparse-map.js";
import { padding } from "./tar-header.js";
import { readTarHeader } from "./tar-reader.js";

/** What an archive that passed the checks unpacks to, as `find` in the machine counts it. */
export interface CheckedHomeStats {
  /** Regular files. */
  files: number;
  /** Every folder, stated in the archive or implied by a path below it. */
  directories: number;
  /** Apparent bytes of the files (a sparse file counts at its real size). */
  bytes: number;
}

/** A home archive being checked as it streams (see `checkHomeArchive`). */
export interface CheckedHomeArchive {
  /**
   * The archive's own bytes, unchanged, each passed on only after the entry
   * it belongs to passed the checks; a refusal errors the stream before the
   * refused entry's first byte. Read it to the end for `stats` to settle.
   */
  readonly tar: Readable;
  /**
   * Settles once the whole archive was read: its counts when every entry
   * passed, else the refusal (RESTORE_REJECTED, LIMIT_EXCEEDED), which can
   * come after the last byte was passed on (data after the end marker).
   * Only then may what was unpacked from `tar` become the home.
   */
  readonly stats: Promise<CheckedHomeStats>;
}

/** Bytes gathered before they are passed on: a home of small files must not become one write per tar block. */
const FLUSH_BYTES = 256 * 1024;
const FILE_CHUNK = 1024 * 1024;

/**
 * Checks a home tar with exactly the rules of `restoreHome` (relative paths
 * without `.` or `..`, directories and regular files only, no entry twice,
 * no file where a folder is or below a file, the limits) while passing it
 * on byte for byte, so a machine's own tar can unpack it into a staging
 * folder as it arrives: nothing is unpacked or re-packed on this host.
 * The receiver must unpack beside the home, never into it, and swap the
 * staged tree in only after `stats` resolved and matches what it unpacked.
 */
export function checkHomeArchive(tarStream: AsyncIterable<Uint8Array>, limits: RestoreLimits = {}): CheckedHomeArchive {
  const bounds = { ...DEFAULT_RESTORE_LIMITS, ...parseInput(restoreLimitsSchema, limits, "RestoreLimits") };
  let settle!: { resolve: (stats: CheckedHomeStats) => void; reject: (error: unknown) => void };
  const stats = new Promise<CheckedHomeStats>((resolve, reject) => {
    settle = { resolve, reject };
  });
  stats.catch(() => {});
  async function* checked(): AsyncGenerator<Buffer> {
    const source = new ByteSource(tarStream);
    let outbox: Buffer[] = [];
    let outboxBytes = 0;
    let settled = false;
    // Taken bytes wait here until their entry passed; only `flush` releases them.
    source.tap = (bytes) => {
      outbox.push(bytes);
      outboxBytes += bytes.length;
    };
    const flush = (): Buffer | undefined => {
      if (outboxBytes === 0) return undefined;
      const out = outbox.length === 1 ? (outbox[0] as Buffer) : Buffer.concat(outbox, outboxBytes);
      outbox = [];
      outboxBytes = 0;
      return out;
    };
    const counts: CheckedHomeStats = { files: 0, directories: 0, bytes: 0 };
    const rules = new HomeEntryRules(bounds);
    try {
      for (;;) {
        const header = await readTarHeader(source);
        if (header === "end") {
          settled = true;
          settle.resolve(counts);
          const rest = flush();
          if (rest) yield rest;
          return;
        }
        const { path, implied, wasImplied } = rules.admit(header);
        counts.directories += implied.length;
        if (header.kind === "directory") {
          if (!wasImplied) counts.directories++;
          if (outboxBytes >= FLUSH_BYTES) yield flush() as Buffer;
          continue;
        }
        counts.files++;
        counts.bytes += header.sparse?.realSize ?? header.size;
        let left = header.size + padding(header.size);
        if (header.sparse) {
          // The map is checked before any of it is passed on; the runs' bytes are plain data.
          const { mapBytes } = await readSparseMap(source, header.size, header.sparse.realSize, shown(path));
          left -= mapBytes;
        }
        if (outboxBytes >= FLUSH_BYTES) yield flush() as Buffer;
        while (left > 0) {
          const chunk = await source.readSome(Math.min(left, FILE_CHUNK));
          if (chunk === undefined) refuseRestore(`the archive is truncated inside "${shown(path)}"`);
          left -= chunk.length;
          if (outboxBytes >= FLUSH_BYTES) yield flush() as Buffer;
        }
      }
    } catch (error) {
      settled = true;
      settle.reject(error);
      await source.close().catch(() => {});
      throw error;
    } finally {
      if (!settled) {
        // The reader stopped early (the machine's tar exited): the archive was never seen whole.
        settle.reject(refusedUnread());
        await source.close().catch(() => {});
      }
    }
  }
  return { tar: Readable.from(checked(), { objectMode: false }), stats };
}

function refusedUnread(): Error {
  try {
    return refuseRestore("the archive was not read to its end");
  } catch (error) {
    return error as Error;
  }
}
