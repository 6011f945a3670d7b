import { displayOf, framebufferOf } from "./desktop-lifecycle.js";
import type { DesktopState } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { encodeFrame, type FrameFormat } from "./frame-encoding.js";
import { runProgram } from "./run-program.js";
import { drawCursor, type FrameRegion, frameHash, readFramebuffer, scaleDown } from "./screen-frame.js";

export interface LookRequest {
  readonly region?: FrameRegion;
  readonly maxWidth?: number;
  readonly includeImage: boolean;
  /** PNG by default; WebP is lossless and smaller without `quality`, lossy with it (frame-encoding.ts). */
  readonly format?: FrameFormat;
  readonly quality?: number;
}

/** What `desktop observe` prints. */
export interface Look {
  readonly display: string;
  /** The whole screen. */
  readonly width: number;
  readonly height: number;
  /** The image's own size (a region, maybe scaled down). */
  readonly imageWidth: number;
  readonly imageHeight: number;
  readonly region?: FrameRegion;
  readonly cursor: { readonly x: number; readonly y: number };
  readonly windowTitle?: string;
  readonly frameHash: string;
  readonly takenAt: number;
  /** The encoded image, base64, in `format`. */
  readonly image?: string;
  readonly format?: FrameFormat;
}

/** Pointer position and focused window title from one xdotool run. */
export async function pointerAndTitle(
  display: string,
): Promise<{ cursor: { x: number; y: number }; windowTitle?: string }> {
  const r = await runProgram("xdotool", ["getmouselocation", "--shell", "getactivewindow", "getwindowname"], {
    env: { DISPLAY: display },
    timeoutMs: 5000,
  });
  const out = r.stdout.toString("utf8");
  const field = (name: string) => Number(new RegExp(`^${name}=(\\d+)$`, "m").exec(out)?.[1] ?? 0);
  // The title is what follows the four KEY=value lines; absent when no window has focus.
  const title = out
    .split("\n")
    .filter((line) => !/^(X|Y|SCREEN|WINDOW)=/.test(line))
    .join("\n")
    .trim();
  return { cursor: { x: field("X"), y: field("Y") }, ...(title ? { windowTitle: title } : {}) };
}

/** One look at a bot's display: pixels with the pointer drawn in, hashed, optionally encoded. */
export async function look(state: DesktopState, record: DisplaySlotRecord, request: LookRequest): Promise<Look> {
  const display = displayOf(record.slot);
  const { cursor, windowTitle } = await pointerAndTitle(display);
  const frame = readFramebuffer(framebufferOf(state, record.slot), request.region);
  drawCursor(frame, cursor.x - (request.region?.x ?? 0), cursor.y - (request.region?.y ?? 0));
  const shown = request.maxWidth ? scaleDown(frame, request.maxWidth) : frame;
  const format = request.format ?? "png";
  return {
    display,
    width: record.width,
    height: record.height,
    imageWidth: shown.width,
    imageHeight: shown.height,
    ...(request.region ? { region: request.region } : {}),
    cursor,
    ...(windowTitle ? { windowTitle } : {}),
    frameHash: frameHash(shown),
    takenAt: Date.now(),
    ...(request.includeImage
      ? { image: (await encodeFrame(shown, format, request.quality)).toString("base64"), format }
      : {}),
  };
}
