import { z } from "zod";

export const linuxObserveOptionsSchema = z.object({
  /** Leave out the PNG (the hash, cursor and title still come). Default true. */
  includeImage: z.boolean().optional(),
  /** Only this part of the screen, in screen pixels. */
  region: z
    .object({
      x: z.number().int().nonnegative(),
      y: z.number().int().nonnegative(),
      width: z.number().int().positive(),
      height: z.number().int().positive(),
    })
    .optional(),
  /** Scale the image down (box filter) to at most this many pixels wide, for models with small image budgets. */
  maxWidth: z.number().int().min(16).max(7680).optional(),
  /**
   * The image format: `"png"` (the default, lossless), or `"jpeg"` / `"webp"`
   * at `quality`, several times smaller, which every model API with images
   * accepts. Encoded in the computer; the observation's `mimeType` says which.
   */
  format: z.enum(["png", "jpeg", "webp"]).optional(),
  /** JPEG/WebP quality from 1 to 100 (default 80); ignored for PNG. */
  quality: z.number().int().min(1).max(100).optional(),
});

/** `observe` options beyond the contract's `includeImage`. */
export type LinuxObserveOptions = z.input<typeof linuxObserveOptionsSchema>;
