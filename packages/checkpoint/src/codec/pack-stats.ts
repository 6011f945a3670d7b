/** What `packHome` put in the archive and what it left out. */
export interface PackStats {
  files: number;
  directories: number;
  /** Bytes of regular-file content. */
  bytes: number;
  /** Entries that are neither directories nor regular files, by kind; never archived. */
  skipped: { symlinks: number; sockets: number; fifos: number; devices: number };
  /** Transient browser-profile files and folders left out (caches, locks). */
  transient: number;
  /**
   * Files that vanished, shrank or grew while being packed. A shrunk file is
   * padded with zero bytes and a grown one cut at its first size, as GNU tar
   * does, so the archive stays well-formed; quiesce writers to avoid this.
   */
  changed: number;
  /** Files the caller's `reuse` kept out of the archive (PackOptions). */
  reused: number;
  /** Files packed as sparse (pax GNU.sparse 1.0): their holes took no archive bytes and restore as holes. */
  sparse: number;
}
