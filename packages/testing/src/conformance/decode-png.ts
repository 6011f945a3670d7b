import { inflateSync } from "node:zlib";
import { crc32 } from "../fake/png.js";

/**
 * Checks that bytes are a whole, valid PNG (signature, chunk CRCs, IHDR,
 * image data that inflates to exactly the rows its size needs) and returns
 * its size. Throws on anything else.
 */
export function decodePngSize(bytes: Uint8Array): { width: number; height: number } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    throw new Error("not a PNG: bad signature");
  }
  let offset = 8;
  let header: { width: number; height: number; depth: number; colour: number; interlace: number } | undefined;
  const data: Buffer[] = [];
  let ended = false;
  while (offset < buf.length && !ended) {
    const length = buf.readUInt32BE(offset);
    const type = buf.toString("ascii", offset + 4, offset + 8);
    const body = buf.subarray(offset + 8, offset + 8 + length);
    if (body.length !== length) throw new Error(`PNG chunk ${type} is truncated`);
    if (crc32(buf.subarray(offset + 4, offset + 8 + length)) !== buf.readUInt32BE(offset + 8 + length)) {
      throw new Error(`PNG chunk ${type} has a bad CRC`);
    }
    if (type === "IHDR") {
      header = {
        width: body.readUInt32BE(0),
        height: body.readUInt32BE(4),
        depth: body[8] as number,
        colour: body[9] as number,
        interlace: body[12] as number,
      };
    } else if (type === "IDAT") data.push(body);
    else if (type === "IEND") ended = true;
    offset += 12 + length;
  }
  if (!header || !ended) throw new Error("PNG lacks IHDR or IEND");
  const channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[header.colour];
  if (channels === undefined) throw new Error(`PNG colour type ${header.colour} is invalid`);
  const pixels = inflateSync(Buffer.concat(data));
  if (header.interlace === 0) {
    const rowBytes = Math.ceil((header.width * channels * header.depth) / 8);
    if (pixels.length !== (rowBytes + 1) * header.height) throw new Error("PNG image data does not match its size");
  }
  return { width: header.width, height: header.height };
}
