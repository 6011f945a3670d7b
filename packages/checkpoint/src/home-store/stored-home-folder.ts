import { constants, existsSync } from "node:fs";
import { type FileHandle, lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { AgentComputerError, normalizeHomePath } from "@agent-computer/core";
import type { StoredHomeEntry, StoredHomeRange } from "./stored-home-entry.js";

const DIR_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY;
// O_NONBLOCK: a FIFO the bot left where a file was listed is not waited on.
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Linux names every open descriptor here; walking through it is `openat` (as `packHome` does, docs/architecture.md §8). */
const FD_DIR = "/proc/self/fd";
const byDescriptor = existsSync(FD_DIR);

/** The most one `read` returns: a caller wanting more of a file asks for ranges. */
export const MAX_STORED_READ_BYTES = 64 * 1024 * 1024;

/**
 * A home folder on this host that a bot may have written (a mounted home is
 * the live folder), read without following any link it planted: every path
 * component is opened O_NOFOLLOW relative to the descriptor of the folder
 * before it, and each folder opened is checked, by the kernel's own name for
 * its descriptor, to be still inside the home. A bot swapping a folder for
 * a link to `/etc` (issue 21, item 1) makes the open fail, never leads out.
 */
export class StoredHomeFolder {
  constructor(private readonly root: string) {}

  /** One folder's entries, sorted by name; links listed as links, never followed. */
  async list(dir: string): Promise<StoredHomeEntry[]> {
    const rel = normalizeHomePath(dir);
    const folder = await this.openFolder(rel);
    try {
      const names = (await readdir(folder.path)).sort();
      const entries: StoredHomeEntry[] = [];
      for (const name of names) {
        const info = await lstat(`${folder.path}/${name}`).catch(() => undefined);
        if (info === undefined) continue; // removed while listing
        const kind = info.isFile()
          ? "file"
          : info.isDirectory()
            ? "directory"
            : info.isSymbolicLink()
              ? "symlink"
              : undefined;
        if (kind === undefined) continue; // sockets, FIFOs and devices are never checkpointed (§8)
        entries.push({
          name,
          path: rel === "" ? name : `${rel}/${name}`,
          kind,
          size: kind === "file" ? info.size : 0,
          mode: info.mode & 0o7777,
          modifiedAt: Math.round(info.mtimeMs),
        });
      }
      return entries;
    } finally {
      await folder.handle.close();
    }
  }

  /** A regular file's size and the bytes of `range` (clamped to the file), read by position: memory is the range. */
  async read(path: string, range?: StoredHomeRange): Promise<{ size: number; bytes: Uint8Array }> {
    const rel = normalizeHomePath(path);
    if (rel === "") throw new AgentComputerError("INVALID_ARGUMENT", "The home itself is a folder; name a file.");
    const slash = rel.lastIndexOf("/");
    const folder = await this.openFolder(slash < 0 ? "" : rel.slice(0, slash));
    let file: FileHandle;
    try {
      file = await open(`${folder.path}/${rel.slice(slash + 1)}`, FILE_FLAGS).catch((error) => refusal(error, path));
    } finally {
      await folder.handle.close();
    }
    try {
      const info = await file.stat();
      if (!info.isFile()) throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is not a regular file.`);
      const start = Math.min(range?.start ?? 0, info.size);
      const end = Math.min(range?.end ?? info.size, info.size);
      if (end - start > MAX_STORED_READ_BYTES)
        throw new AgentComputerError(
          "LIMIT_EXCEEDED",
          `Reading ${end - start} bytes of "${path}" at once is over the ${MAX_STORED_READ_BYTES}-byte limit; read it in ranges.`,
        );
      const bytes = new Uint8Array(end - start);
      let got = 0;
      while (got < bytes.length) {
        const { bytesRead } = await file.read(bytes, got, bytes.length - got, start + got);
        if (bytesRead === 0) break; // shrunk while reading
        got += bytesRead;
      }
      return { size: info.size, bytes: got === bytes.length ? bytes : bytes.subarray(0, got) };
    } finally {
      await file.close();
    }
  }

  /** Opens `rel` one component at a time, each relative to the descriptor before it. */
  private async openFolder(rel: string): Promise<{ handle: FileHandle; path: string }> {
    const rootReal = await realpath(this.root).catch((error) => refusal(error, rel));
    let handle = await open(this.root, DIR_FLAGS).catch((error) => refusal(error, rel));
    let path = byDescriptor ? `${FD_DIR}/${handle.fd}` : this.root;
    let walked = "";
    try {
      for (const name of rel === "" ? [] : rel.split("/")) {
        walked = walked === "" ? name : `${walked}/${name}`;
        const next = await open(`${path}/${name}`, DIR_FLAGS).catch((error) => refusal(error, walked));
        await handle.close();
        handle = next;
        path = byDescriptor ? `${FD_DIR}/${handle.fd}` : `${this.root}/${walked}`;
        if (byDescriptor) await assertInside(path, rootReal, walked);
      }
      return { handle, path };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }
}

/** Defence in depth: the folder open is under the home, by the kernel's name for its descriptor. */
async function assertInside(fdPath: string, rootReal: string, rel: string): Promise<void> {
  const real = await readlink(fdPath);
  if (real !== rootReal && !real.startsWith(`${rootReal}/`))
    throw new AgentComputerError("INVALID_ARGUMENT", `"${rel}" was moved out of the home while it was opened.`);
}

function refusal(error: unknown, path: string): never {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") throw new AgentComputerError("NOT_FOUND", `"${path}" is not in the stored home.`);
  if (code === "ELOOP")
    throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is a link; links in a stored home are never followed.`);
  if (code === "ENOTDIR") throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is not a folder.`);
  if (code === "ENAMETOOLONG") throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is too long a path.`);
  throw new AgentComputerError("UNAVAILABLE", `Could not read "${path}" of the stored home (${code ?? "error"}).`, {
    cause: error,
  });
}
