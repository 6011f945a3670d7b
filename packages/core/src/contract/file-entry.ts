/** One entry of `files.list`. */
export interface FileEntry {
  /** The entry's own name. */
  readonly name: string;
  /** Its POSIX path relative to the home. */
  readonly path: string;
  readonly type: "file" | "directory" | "symlink" | "other";
  /** Size in bytes (0 for directories). */
  readonly size: number;
  /** Last modification, in milliseconds since the epoch. */
  readonly modifiedAt: number;
}
