import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { drawCursor, encodePng, frameHash, readFramebuffer, scaleDown } from "../computer/desktop/screen-frame.js";

const dir = mkdtempSync(join(tmpdir(), "screen-frame-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An XWD file laid out as Xvfb's -fbdir keeps it: 32 bits per pixel, LSB first, 8-bit masks. */
function xwd(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): string {
  const header = Buffer.alloc(104);
  const fields = [104, 7, 2, 24, width, height, 0, 0, 32, 0, 32, 32, width * 4, 4, 0xff0000, 0xff00, 0xff, 8, 256, 2];
  fields.forEach((v, i) => {
    header.writeUInt32BE(v, i * 4);
  });
  const colours = Buffer.alloc(2 * 12);
  const pixels = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      pixels.writeUInt32LE((r << 16) | (g << 8) | b, (y * width + x) * 4);
    }
  const file = join(dir, `fb-${width}x${height}-${Math.random()}`);
  writeFileSync(file, Buffer.concat([header, colours, pixels]));
  return file;
}

function decode(png: Buffer): { width: number; height: number; rgb: Buffer } {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  let offset = 8;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    if (png.toString("ascii", offset + 4, offset + 8) === "IDAT")
      idat.push(png.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * 3;
  const rgb = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let i = 0; i < stride; i++) {
      const up = y > 0 ? (rgb[(y - 1) * stride + i] as number) : 0;
      rgb[y * stride + i] = ((raw[y * (stride + 1) + 1 + i] as number) + (filter === 2 ? up : 0)) & 0xff;
    }
  }
  return { width, height, rgb };
}

describe("screen frames", () => {
  const gradient = xwd(40, 30, (x, y) => [x * 6, y * 8, 100]);

  it("reads the framebuffer's pixels as RGB, whole or a region", () => {
    const whole = readFramebuffer(gradient);
    expect([whole.width, whole.height]).toEqual([40, 30]);
    expect([...whole.rgb.subarray((5 * 40 + 7) * 3, (5 * 40 + 7) * 3 + 3)]).toEqual([42, 40, 100]);
    const region = readFramebuffer(gradient, { x: 7, y: 5, width: 3, height: 2 });
    expect([...region.rgb.subarray(0, 3)]).toEqual([42, 40, 100]);
    expect(() => readFramebuffer(gradient, { x: 39, y: 0, width: 2, height: 1 })).toThrow(/leaves the 40x30 screen/);
  });

  it("encodes a PNG that decodes to the same pixels", () => {
    const frame = readFramebuffer(gradient);
    const decoded = decode(encodePng(frame));
    expect([decoded.width, decoded.height]).toEqual([40, 30]);
    expect(decoded.rgb.equals(frame.rgb)).toBe(true);
  });

  it("hashes pixels: the pointer moves the hash, the same pixels keep it", () => {
    const flat = xwd(64, 64, () => [200, 200, 200]);
    const a = readFramebuffer(flat);
    const b = readFramebuffer(flat);
    expect(frameHash(a)).toBe(frameHash(b));
    drawCursor(a, 10, 10);
    drawCursor(b, 11, 10);
    expect(frameHash(a)).not.toBe(frameHash(b));
    const c = readFramebuffer(flat);
    drawCursor(c, 10, 10);
    expect(frameHash(c)).toBe(frameHash(a));
    // Drawn where the pointer is: the tip is outline-black, off-pointer pixels untouched.
    expect([...a.rgb.subarray((10 * 64 + 10) * 3, (10 * 64 + 10) * 3 + 3)]).toEqual([0, 0, 0]);
    expect([...a.rgb.subarray((10 * 64 + 9) * 3, (10 * 64 + 9) * 3 + 3)]).toEqual([200, 200, 200]);
    drawCursor(readFramebuffer(flat), 63, 63); // at the edge: clipped, no throw
  });

  it("scales down by averaging boxes of pixels", () => {
    const stripes = xwd(8, 4, (x) => (x % 2 === 0 ? [0, 0, 0] : [255, 255, 255]));
    const half = scaleDown(readFramebuffer(stripes), 4);
    expect([half.width, half.height]).toEqual([4, 2]);
    expect([...half.rgb.subarray(0, 3)]).toEqual([128, 128, 128]);
    const same = readFramebuffer(stripes);
    expect(scaleDown(same, 16)).toBe(same);
  });
});
