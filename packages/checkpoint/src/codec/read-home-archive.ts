import { parseInput } from "@agent-computer/core";
import { ByteSource } from "./byte-source.js";
import type { HomeEntryItem } from "./entry-reader.js";
import { HomeEntryRules } from "./home-entry-rules.js";
import { DEFAULT_RESTORE_LIMITS, type RestoreLimits, restoreLimitsSchema } from "./restore-limits.js";
import { refuseRestore, shown } from "./restore-refusal.js";
import { readSparseMap } from "./sparse-map.js";
import { padding } from "./tar-header.js";
import { readTarHeader } from "./tar-reader.js";

const PIECE = 1024 * 1024;
/** Holes read as zeros, handed out in views of this one buffer, which nobody writes. */
const ZEROS = Buffer.alloc(PIECE);

/**
 * A home tar as the entries its restore would make, without making them:
 * each directory and regular file with the mode and mtime a restore gives
 * it (a folder keeps its owner's access; mtime in whole seconds, a
 * folder's the archive's, which no restore keeps: writing its files moves
 * it), a file's
 * entry followed by its bytes (a sparse file's holes as zeros, to its real
 * size), folders that a deeper path implies as entries of their own, every
 * entry under the same rules as `restoreHome` (home-entry-rules.ts).
 * What a restore of the archive and then a walk of the result would give,
 * at the cost of reading it: a checkpoint of a mounted home names its
 * chunks straight from `packHome`'s tar (issue 48: the scratch copy it was
 * staged into cost more than all the rest). Closing the iterator early
 * closes the archive's stream.
 */
export async function* readHomeArchive(
  tarStream: AsyncIterable<Uint8Array>,
  limits: RestoreLimits = {},
): AsyncGenerator<HomeEntryItem> {
  const bounds = { ...DEFAULT_RESTORE_LIMITS, ...parseInput(restoreLimitsSchema, limits, "RestoreLimits") };
  const source = new ByteSource(tarStream);
  const rules = new HomeEntryRules(bounds);
  try {
    for (;;) {
      const header = await readTarHeader(source);
      if (header === "end") return;
      const { path, implied } = rules.admit(header);
      for (const parent of implied) yield { kind: "directory", path: parent, mode: 0o755, mtime: 0 };
      const mode = header.mode & 0o777;
      const mtime = Math.max(0, Math.floor(header.mtime));
      if (header.kind === "directory") {
        yield { kind: "directory", path, mode: mode | 0o700, mtime };
        continue;
      }
      const size = header.sparse?.realSize ?? header.size;
      yield { kind: "file", path, mode, mtime, size };
      if (header.sparse) yield* sparseBytes(source, header.size, size, path);
      else yield* dataBytes(source, header.size, path);
      if (padding(header.size) > 0 && (await source.read(padding(header.size))) === undefined)
        refuseRestore(`the archive is truncated after "${shown(path)}"`);
    }
  } finally {
    await source.close().catch(() => {});
  }
}

async function* dataBytes(source: ByteSource, size: number, path: string): AsyncGenerator<Uint8Array> {
  for (let left = size; left > 0; ) {
    const piece = await source.readSome(Math.min(left, PIECE));
    if (piece === undefined) refuseRestore(`the archive is truncated inside "${shown(path)}"`);
    left -= piece.length;
    yield piece;
  }
}

/** A sparse entry's file: zeros where its map has holes, its runs' data where it has data. */
async function* sparseBytes(
  source: ByteSource,
  entrySize: number,
  realSize: number,
  path: string,
): AsyncGenerator<Uint8Array> {
  const { runs } = await readSparseMap(source, entrySize, realSize, shown(path));
  let at = 0;
  for (const run of runs) {
    yield* zeros(run.offset - at);
    yield* dataBytes(source, run.length, path);
    at = run.offset + run.length;
  }
  yield* zeros(realSize - at);
}

function* zeros(length: number): Generator<Uint8Array> {
  for (let left = length; left > 0; left -= PIECE) yield ZEROS.subarray(0, Math.min(left, PIECE));
}
