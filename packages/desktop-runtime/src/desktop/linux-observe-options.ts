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
   * The image format, encoded in the computer; the observation's `mimeType`
   * says which. `"png"` (the default); `"webp"`: without `quality` lossless,
   * every pixel kept, and on screens of text and UI a fraction of PNG's
   * bytes and quicker to make; with `quality` lossy, for photos and video;
   * `"jpeg"` at `quality`, for consumers that take nothing else (on text
   * it is larger than PNG). Every model API with images accepts all three.
   */
  format: z.enum(["png", "jpeg", "webp"]).optional(),
  /** Lossy quality from 1 to 100: JPEG's (default 80), or lossy WebP's; ignored for PNG. */
  quality: z.number().int().min(1).max(100).optional(),
});

/** `observe` options beyond the contract's `includeImage`. */
export type LinuxObserveOptions = z.input<typeof linuxObserveOptionsSchema>;
