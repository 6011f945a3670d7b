/** What a restore wrote. */
export interface RestoreStats {
  files: number;
  directories: number;
  /** Bytes of regular-file content. */
  bytes: number;
}
