import { CliError } from "./cli-error.js";
import { runProgram } from "./run-program.js";
import { encodePng, type RgbFrame } from "./screen-frame.js";

/** What an observation can be encoded as: formats every model API with images accepts. */
export type FrameFormat = "png" | "jpeg" | "webp";
export const FRAME_FORMATS: readonly FrameFormat[] = ["png", "jpeg", "webp"];
/** JPEG quality when the caller names none. */
export const DEFAULT_JPEG_QUALITY = 80;

/**
 * The arguments ImageMagick encodes a frame with. WebP without a quality
 * is lossless at libwebp's method 1: on the desktop bench's text and the
 * page-browser fixture pages it is 0.07 to 0.36 of our PNG's bytes, with
 * every pixel kept, in about the time lossy WebP at q80 takes; lossy WebP
 * and JPEG blur text into more bytes than that (JPEG at q80 into more than
 * PNG's). Method 0 is faster but larger than PNG on pages with coloured
 * areas. The figures: `npm run bench -- frames`. A quality asks for lossy
 * WebP, which suits photos and video.
 */
export function encoderArguments(format: "jpeg" | "webp", quality: number | undefined): string[] {
  if (format === "jpeg") return ["-quality", String(quality ?? DEFAULT_JPEG_QUALITY)];
  if (quality !== undefined) return ["-quality", String(quality)];
  return ["-define", "webp:lossless=true", "-define", "webp:method=1"];
}

/**
 * PNG is encoded here (screen-frame.ts); JPEG and WebP by the image's
 * ImageMagick from a PPM on stdin (libjpeg-turbo and libwebp do the work),
 * asynchronously so the resident service keeps serving screens meanwhile.
 * One thread: on a computer of few cores ImageMagick's thread pool won
 * nothing the bench's sweep could tell from noise (it times both), and one
 * thread leaves the other cores to the desktop the frame shows.
 */
export async function encodeFrame(frame: RgbFrame, format: FrameFormat, quality?: number): Promise<Buffer> {
  if (format === "png") return encodePng(frame);
  const ppm = Buffer.concat([Buffer.from(`P6\n${frame.width} ${frame.height}\n255\n`, "ascii"), frame.rgb]);
  const r = await runProgram("convert", ["ppm:-", ...encoderArguments(format, quality), `${format}:-`], {
    env: { MAGICK_THREAD_LIMIT: "1" },
    input: ppm,
    timeoutMs: 20_000,
  });
  if (r.status !== 0 || r.stdout.length === 0) {
    throw new CliError("UNAVAILABLE", `Encoding the frame as ${format} failed: ${r.stderr.trim().slice(0, 200)}`);
  }
  return r.stdout;
}
