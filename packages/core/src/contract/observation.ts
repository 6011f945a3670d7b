/** One look at a bot's desktop. */
export interface Observation {
  /** The image's bytes (PNG unless the caller asked for another format); absent when the caller asked for no image. */
  readonly image?: Uint8Array;
  /** The image's format: PNG by default; a provider may offer JPEG or WebP on request. */
  readonly mimeType: "image/png" | "image/jpeg" | "image/webp";
  /** The display size in pixels; the PNG has exactly this size. */
  readonly width: number;
  readonly height: number;
  readonly cursor: { readonly x: number; readonly y: number };
  /** Equal hashes mean identical frames, so a caller can skip resending. */
  readonly frameHash: string;
  /** The focused window's title, when there is one. */
  readonly windowTitle?: string;
  /** Milliseconds since the epoch. */
  readonly takenAt: number;
}
