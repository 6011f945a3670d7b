import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { CliError } from "./cli-error.js";

/** RGB pixels, 3 bytes each, rows top to bottom. */
export interface RgbFrame {
  readonly width: number;
  readonly height: number;
  readonly rgb: Buffer;
}

export interface FrameRegion {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/**
 * Reads the display's framebuffer straight from the file Xvfb keeps it in
 * (`-fbdir`, an XWD image mapped into memory): no X round trip and no
 * encoder process, so a look costs a file read. The pointer is not in the
 * framebuffer; callers draw it with `drawCursor`.
 */
export function readFramebuffer(file: string, region?: FrameRegion): RgbFrame {
  const xwd = readFileSync(file);
  const headerSize = xwd.readUInt32BE(0);
  const width = xwd.readUInt32BE(16);
  const height = xwd.readUInt32BE(20);
  const byteOrder = xwd.readUInt32BE(28); // 0: least significant byte first
  const bitsPerPixel = xwd.readUInt32BE(44);
  const bytesPerLine = xwd.readUInt32BE(48);
  const masks = [xwd.readUInt32BE(56), xwd.readUInt32BE(60), xwd.readUInt32BE(64)];
  const colours = xwd.readUInt32BE(76);
  if (bitsPerPixel !== 32) throw new CliError("UNAVAILABLE", `Unexpected framebuffer depth ${bitsPerPixel}.`);
  const area = region ?? { x: 0, y: 0, width, height };
  if (area.x + area.width > width || area.y + area.height > height) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `The region ${area.width}x${area.height} at (${area.x}, ${area.y}) leaves the ${width}x${height} screen.`,
    );
  }
  const shifts = masks.map((m) => (m === 0 ? 0 : 31 - Math.clz32(m & -m)));
  const [rs, gs, bs] = shifts as [number, number, number];
  const pixels = headerSize + colours * 12;
  const rgb = Buffer.allocUnsafe(area.width * area.height * 3);
  const little = byteOrder === 0;
  let o = 0;
  for (let y = area.y; y < area.y + area.height; y++) {
    let p = pixels + y * bytesPerLine + area.x * 4;
    for (let x = 0; x < area.width; x++, p += 4) {
      const v = little ? xwd.readUInt32LE(p) : xwd.readUInt32BE(p);
      rgb[o++] = (v >>> rs) & 0xff;
      rgb[o++] = (v >>> gs) & 0xff;
      rgb[o++] = (v >>> bs) & 0xff;
    }
  }
  return { width: area.width, height: area.height, rgb };
}

/** The size of the framebuffer without reading its pixels. */
export function framebufferSize(file: string): { width: number; height: number } {
  const xwd = readFileSync(file).subarray(0, 24);
  return { width: xwd.readUInt32BE(16), height: xwd.readUInt32BE(20) };
}

// A classic arrow pointer, 12x19: "#" outline, "." fill.
const POINTER = [
  "#",
  "##",
  "#.#",
  "#..#",
  "#...#",
  "#....#",
  "#.....#",
  "#......#",
  "#.......#",
  "#........#",
  "#.........#",
  "#..........#",
  "#......#####",
  "#...#..#",
  "#..##..#",
  "#.#  #..#",
  "##   #..#",
  "      #..#",
  "       ##",
];

/**
 * Draws the pointer with its tip at (x, y) relative to the frame's origin,
 * so a frame shows where the mouse is and moving it changes the frame hash.
 */
export function drawCursor(frame: RgbFrame, x: number, y: number): void {
  for (let row = 0; row < POINTER.length; row++) {
    const line = POINTER[row] as string;
    for (let col = 0; col < line.length; col++) {
      const c = line[col];
      if (c !== "#" && c !== ".") continue;
      const px = x + col;
      const py = y + row;
      if (px < 0 || py < 0 || px >= frame.width || py >= frame.height) continue;
      const v = c === "#" ? 0 : 255;
      frame.rgb.fill(v, (py * frame.width + px) * 3, (py * frame.width + px) * 3 + 3);
    }
  }
}

/** A digest of the pixels: equal frames give equal hashes whatever the PNG encoder does. */
export function frameHash(frame: RgbFrame): string {
  return createHash("sha1").update(`${frame.width}x${frame.height}\0`).update(frame.rgb).digest("hex");
}

/** Averages boxes of pixels so the frame is at most `maxWidth` wide (for models with small image budgets). */
export function scaleDown(frame: RgbFrame, maxWidth: number): RgbFrame {
  if (frame.width <= maxWidth) return frame;
  const width = maxWidth;
  const height = Math.max(1, Math.round((frame.height * maxWidth) / frame.width));
  const rgb = Buffer.allocUnsafe(width * height * 3);
  const xs = Array.from({ length: width + 1 }, (_, i) => Math.floor((i * frame.width) / width));
  const ys = Array.from({ length: height + 1 }, (_, i) => Math.floor((i * frame.height) / height));
  let o = 0;
  for (let y = 0; y < height; y++) {
    const y0 = ys[y] as number;
    const y1 = Math.max(y0 + 1, ys[y + 1] as number);
    for (let x = 0; x < width; x++) {
      const x0 = xs[x] as number;
      const x1 = Math.max(x0 + 1, xs[x + 1] as number);
      let r = 0;
      let g = 0;
      let b = 0;
      for (let sy = y0; sy < y1; sy++) {
        let p = (sy * frame.width + x0) * 3;
        for (let sx = x0; sx < x1; sx++, p += 3) {
          r += frame.rgb[p] as number;
          g += frame.rgb[p + 1] as number;
          b += frame.rgb[p + 2] as number;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      rgb[o++] = Math.round(r / n);
      rgb[o++] = Math.round(g / n);
      rgb[o++] = Math.round(b / n);
    }
  }
  return { width, height, rgb };
}

/**
 * Encodes an 8-bit RGB PNG. Each row uses the "Up" filter, which turns the
 * large flat areas of a desktop into zeros that deflate well, at a fast
 * compression level: a look is latency-bound, not size-bound.
 */
export function encodePng(frame: RgbFrame): Buffer {
  const { width, height, rgb } = frame;
  const stride = width * 3;
  const raw = Buffer.allocUnsafe((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    const out = y * (stride + 1);
    const row = y * stride;
    if (y === 0) {
      raw[out] = 0;
      rgb.copy(raw, out + 1, row, row + stride);
      continue;
    }
    raw[out] = 2;
    for (let i = 0; i < stride; i++)
      raw[out + 1 + i] = ((rgb[row + i] as number) - (rgb[row - stride + i] as number)) & 0xff;
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw, { level: 4 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
  return Buffer.concat([head, body, crc]);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = (CRC_TABLE[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
