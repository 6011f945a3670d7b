/** Bounds a restore enforces; going over one is LIMIT_EXCEEDED. */
export interface RestoreLimits {
  /** All file content together (default 64 GiB). */
  maxTotalBytes?: number;
  /** Files plus directories (default 1,000,000). */
  maxEntries?: number;
  /** One file (default 16 GiB). */
  maxFileBytes?: number;
  /** One path, in bytes of UTF-8 (default 4096, Linux's PATH_MAX). */
  maxPathLength?: number;
  /** Directory depth (default 256). */
  maxDepth?: number;
}

export const DEFAULT_RESTORE_LIMITS: Required<RestoreLimits> = {
  maxTotalBytes: 64 * 1024 ** 3,
  maxEntries: 1_000_000,
  maxFileBytes: 16 * 1024 ** 3,
  maxPathLength: 4096,
  maxDepth: 256,
};
