import type { HomeManifestEntry } from "./home-manifest.js";

// A v2 restore hands `stageHome` (the codec's checked, whole-or-nothing
// extraction) an ordinary tar built from the manifest, so the v1 restore
// rules apply unchanged. Every entry gets a pax header with its path and
// size: no ustar name-splitting to get wrong.
const BLOCK = 512;
export const TAR_END = Buffer.alloc(2 * BLOCK);

/**
 * The pax header, its records and the entry's ustar header, written into
 * one zeroed buffer: a restore makes one per file (20,000 for a home of
 * small files, issue 48), so no piece is allocated and copied apart.
 */
export function tarHeaderOf(entry: HomeManifestEntry): Buffer {
  const size = entry.kind === "file" ? entry.size : 0;
  const name = entry.kind === "directory" ? `${entry.path}/` : entry.path;
  const records = paxRecord("path", name) + paxRecord("size", String(size));
  const bodyBytes = Buffer.byteLength(records, "utf8");
  const bodyBlocks = bodyBytes + padding(bodyBytes);
  const out = Buffer.alloc(BLOCK + bodyBlocks + BLOCK);
  ustar(out, 0, "PaxHeader", "x", 0o644, bodyBytes, entry.mtime);
  out.write(records, BLOCK, bodyBytes, "utf8");
  ustar(out, BLOCK + bodyBlocks, "entry", entry.kind === "directory" ? "5" : "0", entry.mode, 0, entry.mtime);
  return out;
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

/** A ustar header in the zeroed block at `at` of `out`. */
function ustar(out: Buffer, at: number, name: string, type: string, mode: number, size: number, mtime: number): void {
  out.write(name, at, 100, "utf8");
  octal(out, at + 100, 8, mode);
  octal(out, at + 108, 8, 0);
  octal(out, at + 116, 8, 0);
  octal(out, at + 124, 12, size);
  octal(out, at + 136, 12, mtime);
  out.write(type, at + 156, 1, "latin1");
  out.write("ustar\u000000", at + 257, 8, "latin1");
  out.fill(0x20, at + 148, at + 156);
  let sum = 0;
  for (let i = at; i < at + BLOCK; i++) sum += out[i] as number;
  out.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, at + 148, 8, "latin1");
}

function octal(out: Buffer, offset: number, length: number, value: number): void {
  out.write(`${value.toString(8).padStart(length - 1, "0")}\u0000`, offset, length, "latin1");
}
