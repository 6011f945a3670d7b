import type { Readable } from "node:stream";
import type { FileEntry } from "./file-entry.js";
import type { OpContext } from "./op-context.js";

/**
 * Files of a machine's home. Paths are POSIX and relative to
 * `Machine.workspacePath`; a path that leaves the home (after resolving `..`
 * and links inside the machine) is refused with INVALID_ARGUMENT.
 */
export interface MachineFiles {
  /**
   * Entries of a directory ("" or "." is the home), sorted by name. NOT_FOUND
   * when missing. With `limit`, at most that many entries: the first the
   * machine's listing yields, sorted, and nothing past them is read or held.
   * Ask for one more than you show to know whether there are more.
   */
  list(path: string, ctx?: OpContext, opts?: { limit?: number }): Promise<FileEntry[]>;
  /**
   * A file's bytes. NOT_FOUND when missing; LIMIT_EXCEEDED over `maxBytes`.
   * With `length`, only the first `length` bytes are read (and the rest is
   * not an error): a caller that shows a file's start never holds the whole
   * file, however large its listed size.
   */
  read(path: string, ctx?: OpContext, opts?: { maxBytes?: number; length?: number }): Promise<Uint8Array>;
  /** Creates or replaces a file, making parent directories. */
  write(path: string, data: Uint8Array | Readable, ctx?: OpContext): Promise<void>;
  /** The whole home as a tar stream (directories and regular files). */
  exportWorkspace(ctx?: OpContext): Promise<Readable>;
  /**
   * Replaces the home whole with a tar stream, through the same checks as a
   * checkpoint restore; a refused import leaves the home as it was. Where
   * the provider has `mountedHome`, only while the machine is stopped
   * (CONFLICT on a running machine): stop, import, reconnect.
   */
  importWorkspace(tar: Readable, ctx?: OpContext): Promise<void>;
}
