import { createWriteStream } from "node:fs";
import { lstat, mkdir, open, opendir, readFile, realpath, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { FileEntry } from "../contract/file-entry.js";
import { normalizeHomePath } from "../contract/home-path.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import type { HomeFiles } from "./home-files.js";

/**
 * File operations on a home that is a folder of this host. Every path is
 * checked lexically, then resolved through links: a link that points out of
 * the home is refused as if the path had said `..`.
 */
export class LocalHome implements HomeFiles {
  constructor(readonly dir: string) {}

  /** The absolute host path for a home-relative path, after the link check. */
  async resolve(path: string): Promise<string> {
    const rel = normalizeHomePath(path);
    const absolute = rel === "" ? this.dir : join(this.dir, rel);
    const root = await realpath(this.dir);
    const real = await realpathOfDeepestExisting(absolute);
    if (real !== root && !real.startsWith(root + sep)) {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Invalid path "${path}": it leads out of the home through a link.`,
      );
    }
    return absolute;
  }

  async list(path: string, opts: { limit?: number } = {}): Promise<FileEntry[]> {
    const absolute = await this.resolve(path);
    const names = await firstNames(absolute, opts.limit ?? Number.POSITIVE_INFINITY).catch((error) =>
      rethrow(error, path),
    );
    const base = normalizeHomePath(path);
    const entries: FileEntry[] = [];
    for (const name of names.sort()) {
      const info = await lstat(join(absolute, name)).catch(() => undefined);
      if (!info) continue; // removed while listing
      entries.push({
        name,
        path: base === "" ? name : `${base}/${name}`,
        type: info.isFile() ? "file" : info.isDirectory() ? "directory" : info.isSymbolicLink() ? "symlink" : "other",
        size: info.isFile() ? info.size : 0,
        modifiedAt: info.mtimeMs,
      });
    }
    return entries;
  }

  async read(path: string, opts: { maxBytes?: number; length?: number } = {}): Promise<Uint8Array> {
    const { maxBytes, length } = opts;
    const absolute = await this.resolve(path);
    const info = await stat(absolute).catch((error) => rethrow(error, path));
    if (!info.isFile()) throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is not a regular file.`);
    if (length !== undefined) return readStart(absolute, Math.min(length, maxBytes ?? length));
    if (maxBytes !== undefined && info.size > maxBytes) {
      throw new AgentComputerError(
        "LIMIT_EXCEEDED",
        `"${path}" is ${info.size} bytes, over the ${maxBytes}-byte read limit; read a smaller file or raise maxBytes.`,
      );
    }
    return new Uint8Array(await readFile(absolute));
  }

  async write(path: string, data: Uint8Array | Readable): Promise<void> {
    if (normalizeHomePath(path) === "")
      throw new AgentComputerError("INVALID_ARGUMENT", "Cannot write to the home itself; name a file.");
    const absolute = await this.resolve(path);
    await mkdir(dirname(absolute), { recursive: true }).catch((error) => rethrow(error, path));
    // Re-check: the folders just made are real ones, but a link may have appeared.
    await this.resolve(path);
    if (data instanceof Uint8Array) await writeFile(absolute, data).catch((error) => rethrow(error, path));
    else await pipeline(data, createWriteStream(absolute)).catch((error) => rethrow(error, path));
  }

  /** The home-relative path of an absolute host path inside it. */
  relative(absolute: string): string {
    return relative(this.dir, absolute).split(sep).join("/");
  }
}

async function realpathOfDeepestExisting(absolute: string): Promise<string> {
  let current = absolute;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await realpath(current);
      return rest.length === 0 ? real : join(real, ...rest.reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      const parent = dirname(current);
      if (parent === current) throw error;
      rest.push(current.slice(parent.length + 1));
      current = parent;
    }
  }
}

function rethrow(error: NodeJS.ErrnoException, path: string): never {
  if (AgentComputerError.is(error)) throw error;
  if (error.code === "ENOENT") throw new AgentComputerError("NOT_FOUND", `"${path}" does not exist in the home.`);
  if (error.code === "ENOTDIR")
    throw new AgentComputerError("INVALID_ARGUMENT", `A parent of "${path}" is a file, not a folder.`);
  if (error.code === "EISDIR") throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is a folder, not a file.`);
  throw new AgentComputerError("UNAVAILABLE", `Could not access "${path}": ${error.code ?? error.message}`, {
    cause: error,
  });
}

/** Up to `limit` names of a folder, without listing the rest of it. */
async function firstNames(absolute: string, limit: number): Promise<string[]> {
  const names: string[] = [];
  if (limit <= 0) return names;
  const dir = await opendir(absolute);
  try {
    for await (const entry of dir) {
      names.push(entry.name);
      if (names.length >= limit) break;
    }
  } finally {
    await dir.close().catch(() => {});
  }
  return names;
}

/** The first `length` bytes of a file (fewer when it is shorter). */
async function readStart(absolute: string, length: number): Promise<Uint8Array> {
  const handle = await open(absolute, "r");
  try {
    const buffer = Buffer.alloc(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await handle.read(buffer, got, length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return new Uint8Array(buffer.buffer, buffer.byteOffset, got);
  } finally {
    await handle.close();
  }
}
