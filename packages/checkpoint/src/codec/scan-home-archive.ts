import { AgentComputerError, normalizeHomePath } from "@agent-computer/core";
import type { StoredHomeEntry, StoredHomeRange } from "../home-store/stored-home-entry.js";
import { MAX_STORED_READ_BYTES } from "../home-store/stored-home-folder.js";
import { ByteSource } from "./byte-source.js";
import { checkPath } from "./check-path.js";
import { DEFAULT_RESTORE_LIMITS } from "./restore-limits.js";
import { readSparseMap } from "./sparse-map.js";
import { padding } from "./tar-header.js";
import { readTarHeader, type TarEntryHeader } from "./tar-reader.js";

// Browsing a home archive that has no index (a format-1 checkpoint in an
// object store, docs/architecture.md §8, issue 29): one streamed pass over
// the plain tar, holding only the asked folder's entries or the asked range.
// Entry paths pass the restore rules (a hostile archive is RESTORE_REJECTED,
// as its restore would be); the asked path passes the tools' rule
// (normalizeHomePath). Links are listed, never followed or read; sockets,
// FIFOs and devices are left out, like the local store's listing.

const SKIP_CHUNK = 1024 * 1024;

/**
 * The entries of folder `dir` ("" for the top) of a plain home tar, sorted
 * by name; folders implied by deeper paths are listed too. Reads the whole
 * archive (the folder's entries may be anywhere in it), so a sealed one is
 * authenticated to its end. NOT_FOUND when the folder is not in it.
 */
export async function listArchivedFolder(tar: AsyncIterable<Uint8Array>, dir: string): Promise<StoredHomeEntry[]> {
  const rel = normalizeHomePath(dir);
  const prefix = rel === "" ? "" : `${rel}/`;
  const children = new Map<string, StoredHomeEntry>();
  let found = rel === "";
  const source = new ByteSource(tar);
  try {
    for (;;) {
      const header = await readTarHeader(source);
      if (header === "end") break;
      const path = checkPath(header.path, DEFAULT_RESTORE_LIMITS);
      await skipData(source, header, path);
      if (path === rel) {
        if (header.kind !== "directory") throw notAFolder(dir);
        found = true;
        continue;
      }
      if (!path.startsWith(prefix)) continue;
      found = true;
      const rest = path.slice(prefix.length);
      const slash = rest.indexOf("/");
      const name = slash === -1 ? rest : rest.slice(0, slash);
      // A folder implied by a deeper path; its own entry, if it comes, replaces this.
      if (slash !== -1) {
        if (!children.has(name))
          children.set(name, { name, path: prefix + name, kind: "directory", size: 0, mode: 0o755, modifiedAt: 0 });
        continue;
      }
      const entry = entryOf(header, name, path);
      if (entry !== undefined) children.set(name, entry);
    }
  } finally {
    await source.close().catch(() => {});
  }
  if (!found) throw new AgentComputerError("NOT_FOUND", `"${dir}" is not in the stored home.`);
  return [...children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * One regular file (or `range` of it, clamped to the file) of a plain home
 * tar, read in one pass that stops once the file was read: only bytes the
 * stream released are returned (a sealed stream releases a segment only
 * after its tag verified). At most MAX_STORED_READ_BYTES at once.
 */
export async function readArchivedFile(
  tar: AsyncIterable<Uint8Array>,
  path: string,
  range?: StoredHomeRange,
): Promise<{ path: string; size: number; bytes: Buffer }> {
  const rel = normalizeHomePath(path);
  if (rel === "") throw new AgentComputerError("INVALID_ARGUMENT", "The home itself is a folder; name a file.");
  const source = new ByteSource(tar);
  try {
    for (;;) {
      const header = await readTarHeader(source);
      if (header === "end") break;
      const entryPath = checkPath(header.path, DEFAULT_RESTORE_LIMITS);
      if (entryPath !== rel) {
        await skipData(source, header, entryPath);
        continue;
      }
      if (header.kind !== "file")
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          header.other === "symbolic link"
            ? `"${path}" is a link; links are never followed.`
            : `"${path}" is not a regular file.`,
        );
      const size = header.sparse?.realSize ?? header.size;
      const start = Math.min(Math.max(range?.start ?? 0, 0), size);
      const end = Math.max(start, Math.min(range?.end ?? size, size));
      if (end - start > MAX_STORED_READ_BYTES)
        throw new AgentComputerError(
          "LIMIT_EXCEEDED",
          `Reading ${end - start} bytes of "${path}" at once is over the ${MAX_STORED_READ_BYTES}-byte limit; read it in ranges.`,
        );
      const bytes = header.sparse
        ? await readSparseRange(source, header, entryPath, start, end)
        : await readRange(source, entryPath, start, end);
      return { path: rel, size, bytes };
    }
  } finally {
    await source.close().catch(() => {});
  }
  throw new AgentComputerError("NOT_FOUND", `"${path}" is not in the stored home.`);
}

function entryOf(header: TarEntryHeader, name: string, path: string): StoredHomeEntry | undefined {
  const kind =
    header.kind === "file"
      ? "file"
      : header.kind === "directory"
        ? "directory"
        : header.other === "symbolic link"
          ? "symlink"
          : undefined;
  if (kind === undefined) return undefined;
  return {
    name,
    path,
    kind,
    size: kind === "file" ? (header.sparse?.realSize ?? header.size) : 0,
    mode: header.mode & 0o7777,
    modifiedAt: header.mtime * 1000,
  };
}

/** Passes over an entry's data and padding, holding at most one chunk. */
async function skipData(source: ByteSource, header: TarEntryHeader, path: string): Promise<void> {
  let left = header.size + padding(header.size);
  while (left > 0) {
    const chunk = await source.readSome(Math.min(left, SKIP_CHUNK));
    if (chunk === undefined) truncated(path);
    left -= chunk.length;
  }
}

/** Bytes [start, end) of an entry of `size` data bytes; what follows is left unread. */
async function readRange(source: ByteSource, path: string, start: number, end: number): Promise<Buffer> {
  await skipBytes(source, start, path);
  const out = Buffer.allocUnsafe(end - start);
  let filled = 0;
  while (filled < out.length) {
    const chunk = await source.readSome(out.length - filled);
    if (chunk === undefined) truncated(path);
    filled += chunk.copy(out, filled);
  }
  return out;
}

/** A sparse entry's range: holes read as zeros, the runs' data from the archive. */
async function readSparseRange(
  source: ByteSource,
  header: TarEntryHeader,
  path: string,
  start: number,
  end: number,
): Promise<Buffer> {
  const { runs } = await readSparseMap(source, header.size, header.sparse?.realSize ?? 0, path);
  const out = Buffer.alloc(end - start);
  for (const run of runs) {
    if (run.offset >= end) break;
    const from = Math.max(run.offset, start);
    const to = Math.min(run.offset + run.length, end);
    if (to <= from) {
      await skipBytes(source, run.length, path);
      continue;
    }
    await skipBytes(source, from - run.offset, path);
    let filled = from - start;
    while (filled < to - start) {
      const chunk = await source.readSome(to - start - filled);
      if (chunk === undefined) truncated(path);
      filled += chunk.copy(out, filled);
    }
    if (to === end) break;
    await skipBytes(source, run.offset + run.length - to, path);
  }
  return out;
}

async function skipBytes(source: ByteSource, count: number, path: string): Promise<void> {
  let left = count;
  while (left > 0) {
    const chunk = await source.readSome(Math.min(left, SKIP_CHUNK));
    if (chunk === undefined) truncated(path);
    left -= chunk.length;
  }
}

function truncated(path: string): never {
  throw new AgentComputerError("RESTORE_REJECTED", `The stored archive is truncated inside "${path}".`);
}

function notAFolder(dir: string): AgentComputerError {
  return new AgentComputerError("INVALID_ARGUMENT", `"${dir}" is not a folder.`);
}
