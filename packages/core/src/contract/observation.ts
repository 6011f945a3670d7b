/** One look at a bot's desktop. */
export interface Observation {
  /** PNG bytes; absent when the caller asked for no image. */
  readonly image?: Uint8Array;
  readonly mimeType: "image/png";
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
