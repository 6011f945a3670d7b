import type { Readable } from "node:stream";
import type { FileEntry } from "../contract/file-entry.js";

/**
 * A home's files, wherever the home lives: a folder of this host
 * (`LocalHome`) or a machine reached through its command channel
 * (`ExecHomeFiles`). Paths are home-relative; each implementation refuses
 * one that leads out of the home, links included.
 */
export interface HomeFiles {
  /** See `MachineFiles.list`. */
  list(path: string, opts?: { limit?: number }): Promise<FileEntry[]>;
  /** See `MachineFiles.read`. */
  read(path: string, opts?: { maxBytes?: number; length?: number }): Promise<Uint8Array>;
  write(path: string, data: Uint8Array | Readable): Promise<void>;
}
