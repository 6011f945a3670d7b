import type { Readable } from "node:stream";
import type { FileEntry } from "./file-entry.js";
import type { OpContext } from "./op-context.js";

/**
 * Files of a machine's home. Paths are POSIX and relative to
 * `Machine.workspacePath`; a path that leaves the home (after resolving `..`
 * and links inside the machine) is refused with INVALID_ARGUMENT.
 */
export interface MachineFiles {
  /** Entries of a directory ("" or "." is the home). NOT_FOUND when missing. */
  list(path: string, ctx?: OpContext): Promise<FileEntry[]>;
  /** A file's bytes. NOT_FOUND when missing; LIMIT_EXCEEDED over `maxBytes`. */
  read(path: string, ctx?: OpContext, opts?: { maxBytes?: number }): Promise<Uint8Array>;
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
