import type { Observation } from "@agent-computer/core";

/**
 * An `Observation` that also says what the image covers when a region or a
 * scale-down was asked for. `width`/`height` stay the screen's size, as
 * the contract says; `cursor` is in screen pixels.
 */
export interface LinuxObservation extends Observation {
  /** The PNG's own size (differs from the screen's with a region or `maxWidth`). */
  readonly imageSize: { readonly width: number; readonly height: number };
  /** The part of the screen the image shows, when a region was asked for. */
  readonly region?: { readonly x: number; readonly y: number; readonly width: number; readonly height: number };
  /** The X display (":100", ...). */
  readonly display: string;
}
