import { z } from "zod";

/**
 * Bounds a restore enforces; going over one is LIMIT_EXCEEDED. Every field
 * is optional; the defaults (`DEFAULT_RESTORE_LIMITS`) fit a generous home
 * and stop a tar bomb long before it fills a disk.
 */
export interface RestoreLimits {
  /** All file content together, in bytes (default 64 GiB). */
  maxTotalBytes?: number;
  /** Files plus directories (default 1,000,000). */
  maxEntries?: number;
  /** One file, in bytes (default 16 GiB). */
  maxFileBytes?: number;
  /** One path, in bytes of UTF-8 (default 4096, Linux's PATH_MAX). */
  maxPathLength?: number;
  /** Directory depth: segments of one path (default 256). */
  maxDepth?: number;
}

export const DEFAULT_RESTORE_LIMITS: Readonly<Required<RestoreLimits>> = Object.freeze({
  maxTotalBytes: 64 * 1024 ** 3,
  maxEntries: 1_000_000,
  maxFileBytes: 16 * 1024 ** 3,
  maxPathLength: 4096,
  maxDepth: 256,
});

const bound = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional();

export const restoreLimitsSchema = z
  .object({
    maxTotalBytes: bound,
    maxEntries: bound,
    maxFileBytes: bound,
    maxPathLength: bound,
    maxDepth: bound,
  })
  .strict();
