import { spawnSync } from "node:child_process";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encoderArguments } from "../computer/desktop/frame-encoding.js";
import { encodePng, type RgbFrame } from "../computer/desktop/screen-frame.js";

// The image's own ImageMagick, given the arguments the service gives it
// (frame-encoding.ts), on a frame of dark strokes on white like a page of
// text: what a format option yields is checked on the real encoder.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "frame encoding",
);

let container = "";
beforeAll(() => {
  if (env.missing) return;
  const run = spawnSync("docker", ["run", "-d", "--network", "none", env.image, "sleep", "300"], { encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  container = run.stdout.trim();
});
afterAll(() => {
  if (container) spawnSync("docker", ["rm", "-f", container]);
});

/** 640x400: rows of short dark strokes of a few greys on white, repeating with variations, as text does. */
function textLikeFrame(): RgbFrame {
  const width = 640;
  const height = 400;
  const rgb = Buffer.alloc(width * height * 3, 255);
  for (let y = 0; y < height; y++) {
    if (y % 20 >= 12) continue; // the gap between lines
    for (let x = 0; x < width; x++) {
      const glyph = (x >> 3) * 7 + (y >> 4) * 3;
      if (glyph % 5 === 0 || (x + y * 3 + glyph) % 4 !== 0) continue;
      rgb.fill(40 + (glyph % 3) * 60, (y * width + x) * 3, (y * width + x) * 3 + 3);
    }
  }
  return { width, height, rgb };
}

function ppm(frame: RgbFrame): Buffer {
  return Buffer.concat([Buffer.from(`P6\n${frame.width} ${frame.height}\n255\n`, "ascii"), frame.rgb]);
}

/** Runs ImageMagick in the computer as the service does: one thread, the frame on stdin. */
function convert(args: string[], input: Buffer): Buffer {
  const r = spawnSync("docker", ["exec", "-i", "-e", "MAGICK_THREAD_LIMIT=1", container, "convert", ...args], {
    input,
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(r.status, r.stderr?.toString()).toBe(0);
  return r.stdout;
}

/** The pixels of an encoded image, decoded by the same ImageMagick. */
function decoded(image: Buffer): Buffer {
  const out = convert(["-", "-depth", "8", "ppm:-"], image);
  return out.subarray(out.length - 640 * 400 * 3);
}

if (!env.missing) {
  describe("frame encoding in the computer image", () => {
    it("WebP without a quality is lossless: the same pixels back, in fewer bytes than our PNG", () => {
      const frame = textLikeFrame();
      const webp = convert(["ppm:-", ...encoderArguments("webp", undefined), "webp:-"], ppm(frame));
      expect(webp.subarray(8, 16).toString("ascii")).toBe("WEBPVP8L"); // the lossless bitstream
      expect(decoded(webp).equals(frame.rgb)).toBe(true);
      expect(webp.length).toBeLessThan(encodePng(frame).length);
    }, 60_000);

    it("WebP with a quality and JPEG are lossy", () => {
      const frame = textLikeFrame();
      const webp = convert(["ppm:-", ...encoderArguments("webp", 60), "webp:-"], ppm(frame));
      expect(webp.subarray(8, 16).toString("ascii")).toBe("WEBPVP8 ");
      expect(decoded(webp).equals(frame.rgb)).toBe(false);
      const jpeg = convert(["ppm:-", ...encoderArguments("jpeg", undefined), "jpeg:-"], ppm(frame));
      expect([...jpeg.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
      expect(decoded(jpeg).equals(frame.rgb)).toBe(false);
    }, 60_000);
  });
}
