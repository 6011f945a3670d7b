import { CliError } from "./cli-error.js";
import { runProgram } from "./run-program.js";
import { encodePng, type RgbFrame } from "./screen-frame.js";

/** What an observation can be encoded as: formats every model API with images accepts. */
export type FrameFormat = "png" | "jpeg" | "webp";
export const FRAME_FORMATS: readonly FrameFormat[] = ["png", "jpeg", "webp"];
/** JPEG/WebP quality when the caller names none: text stays legible, the image is a fraction of a PNG. */
export const DEFAULT_QUALITY = 80;

/**
 * PNG is encoded here (screen-frame.ts); JPEG and WebP by the image's
 * ImageMagick from a PPM on stdin (libjpeg-turbo and libwebp do the work),
 * asynchronously so the resident service keeps serving screens meanwhile.
 */
export async function encodeFrame(frame: RgbFrame, format: FrameFormat, quality = DEFAULT_QUALITY): Promise<Buffer> {
  if (format === "png") return encodePng(frame);
  const ppm = Buffer.concat([Buffer.from(`P6\n${frame.width} ${frame.height}\n255\n`, "ascii"), frame.rgb]);
  const r = await runProgram("convert", ["ppm:-", "-quality", String(quality), `${format}:-`], {
    input: ppm,
    timeoutMs: 20_000,
  });
  if (r.status !== 0 || r.stdout.length === 0) {
    throw new CliError("UNAVAILABLE", `Encoding the frame as ${format} failed: ${r.stderr.trim().slice(0, 200)}`);
  }
  return r.stdout;
}
