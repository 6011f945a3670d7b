import type { Readable } from "node:stream";
import type { PackStats } from "./pack-stats.js";

/** The result of `packHome`. */
export interface PackedHome {
  /** The tar stream: directories and regular files, in a stable order. */
  readonly tar: Readable;
  /** Resolves once the whole archive was produced; rejects with the stream's error. */
  readonly stats: Promise<PackStats>;
}
