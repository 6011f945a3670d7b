import { createHash } from "node:crypto";

/**
 * What bot `botId` writes in generation `generation`: 64 KiB that only
 * that pair produces, so a restored file proves itself byte for byte.
 */
export function botBytes(botId: string, generation: number): Uint8Array {
  const out = new Uint8Array(64 * 1024);
  let block = createHash("sha256").update(`${botId}/${generation}`).digest();
  for (let i = 0; i < out.length; i += block.length) {
    out.set(block.subarray(0, Math.min(block.length, out.length - i)), i);
    block = createHash("sha256").update(block).digest();
  }
  return out;
}

export function botFile(botId: string, generation: number): string {
  return `bots/${botId}/gen-${generation}.bin`;
}
