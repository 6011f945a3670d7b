import { spawnSync } from "node:child_process";
import { displayOf, framebufferOf } from "./desktop-lifecycle.js";
import type { DesktopState } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { drawCursor, encodePng, type FrameRegion, frameHash, readFramebuffer, scaleDown } from "./screen-frame.js";

export interface LookRequest {
  readonly region?: FrameRegion;
  readonly maxWidth?: number;
  readonly includeImage: boolean;
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
  readonly png?: string;
}

/** Pointer position and focused window title from one xdotool run. */
export function pointerAndTitle(display: string): { cursor: { x: number; y: number }; windowTitle?: string } {
  const r = spawnSync("xdotool", ["getmouselocation", "--shell", "getactivewindow", "getwindowname"], {
    env: { ...process.env, DISPLAY: display },
    encoding: "utf8",
    timeout: 5000,
  });
  const out = r.stdout ?? "";
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
export function look(state: DesktopState, record: DisplaySlotRecord, request: LookRequest): Look {
  const display = displayOf(record.slot);
  const { cursor, windowTitle } = pointerAndTitle(display);
  const frame = readFramebuffer(framebufferOf(state, record.slot), request.region);
  drawCursor(frame, cursor.x - (request.region?.x ?? 0), cursor.y - (request.region?.y ?? 0));
  const shown = request.maxWidth ? scaleDown(frame, request.maxWidth) : frame;
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
    ...(request.includeImage ? { png: encodePng(shown).toString("base64") } : {}),
  };
}
