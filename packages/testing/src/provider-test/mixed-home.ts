import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";

/**
 * Fills `dir` with `bytes` of random files the way a real home mixes them:
 * two of 50 MiB, sixty of 1 MiB in six folders, and the rest as many small
 * notes (1 to 31 KiB) in forty folders. The benches of home transfer use it.
 */
export async function writeMixedHome(dir: string, bytes: number): Promise<void> {
  let left = bytes;
  const put = async (rel: string, size: number) => {
    await mkdir(join(dir, rel, ".."), { recursive: true });
    await writeFile(join(dir, rel), randomBytes(size));
    left -= size;
  };
  for (let i = 0; i < 2; i++) await put(`large/blob-${i}.bin`, 50 * 1024 * 1024);
  for (let i = 0; i < 60; i++) await put(`medium/${i % 6}/file-${i}.dat`, 1024 * 1024);
  for (let i = 0; left > 0; i++)
    await put(`small/${i % 40}/note-${i}.txt`, Math.min(left, 1024 + ((i * 7919) % 30_000)));
}

/** Reads a stream to its end; the number of bytes it gave. */
export async function countBytes(stream: Readable): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  return bytes;
}
