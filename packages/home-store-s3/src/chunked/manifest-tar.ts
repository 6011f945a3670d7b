import type { HomeManifestEntry } from "./home-manifest.js";

// A v2 restore hands `stageHome` (the codec's checked, whole-or-nothing
// extraction) an ordinary tar built from the manifest, so the v1 restore
// rules apply unchanged. Every entry gets a pax header with its path and
// size: no ustar name-splitting to get wrong.
const BLOCK = 512;
export const TAR_END = Buffer.alloc(2 * BLOCK);

export function tarHeaderOf(entry: HomeManifestEntry): Buffer {
  const size = entry.kind === "file" ? entry.size : 0;
  const name = entry.kind === "directory" ? `${entry.path}/` : entry.path;
  const records = paxRecord("path", name) + paxRecord("size", String(size));
  const body = Buffer.from(records, "utf8");
  const pax = ustar("PaxHeader", "x", 0o644, body.length, entry.mtime);
  const main = ustar("entry", entry.kind === "directory" ? "5" : "0", entry.mode, 0, entry.mtime);
  return Buffer.concat([pax, body, Buffer.alloc(padding(body.length)), main]);
}

export function padding(size: number): number {
  const rest = size % BLOCK;
  return rest === 0 ? 0 : BLOCK - rest;
}

function paxRecord(key: string, value: string): string {
  // A record states its own length, digits included.
  const text = ` ${key}=${value}\n`;
  const base = Buffer.byteLength(text, "utf8");
  let length = base;
  while (base + String(length).length !== length) length = base + String(length).length;
  return `${length}${text}`;
}

function ustar(name: string, type: string, mode: number, size: number, mtime: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, "utf8");
  octal(block, 100, 8, mode);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  octal(block, 124, 12, size);
  octal(block, 136, 12, mtime);
  block.write(type, 156, 1, "latin1");
  block.write("ustar\u000000", 257, 8, "latin1");
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, 8, "latin1");
  return block;
}

function octal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, "0")}\u0000`, offset, length, "latin1");
}
