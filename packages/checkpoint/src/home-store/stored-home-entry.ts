/**
 * One entry of a folder in a home's latest stored revision, as a person's
 * Files window lists it (issue 29). Links are listed, never followed.
 */
export interface StoredHomeEntry {
  /** The entry's name inside its folder (no slashes). */
  readonly name: string;
  /** Home-relative path with `/` separators, e.g. `bots/alice/notes.md`. */
  readonly path: string;
  readonly kind: "file" | "directory" | "symlink";
  /** Apparent size in bytes for files; 0 for folders and links. */
  readonly size: number;
  /** Permission bits (e.g. 0o644). */
  readonly mode: number;
  /** Modification time in milliseconds since the epoch. */
  readonly modifiedAt: number;
}

/** A byte range of a stored file: `start` inclusive, `end` exclusive. */
export interface StoredHomeRange {
  readonly start: number;
  readonly end: number;
}

/** What `AgentHomeStore.read` returns: the bytes asked for and the file's whole size. */
export interface StoredHomeFile {
  readonly path: string;
  /** The file's whole size, whatever range was read. */
  readonly size: number;
  /** The revision the bytes came from. */
  readonly revision: number;
  readonly bytes: Uint8Array;
}
