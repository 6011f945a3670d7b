import type { EntryReader } from "./entry-reader.js";
import { refuseRestore } from "./restore-refusal.js";
import { BLOCK, padding } from "./tar-header.js";

/**
 * Sparse files in the archive (pax GNU.sparse 1.0, as GNU tar writes them):
 * the entry's data starts with a map, decimal numbers one per line (the
 * count of runs, then each run's offset and length), zero-padded to a
 * block, and the runs' bytes follow back to back. Everything between runs is
 * a hole: restored as a hole, it takes no disk and no archive bytes.
 */
export interface DataRun {
  offset: number;
  length: number;
}

/** Most runs a map may list: a hostile map cannot make the restore hold millions of them. */
export const MAX_RUNS = 100_000;

export function encodeSparseMap(runs: readonly DataRun[]): Buffer {
  const text = [String(runs.length), ...runs.flatMap((run) => [String(run.offset), String(run.length)])].join("\n");
  const bytes = Buffer.from(`${text}\n`, "ascii");
  return Buffer.concat([bytes, Buffer.alloc(padding(bytes.length))]);
}

/**
 * Reads and checks the map at the start of a sparse entry of `entrySize`
 * bytes: runs in order, not overlapping, inside `realSize`, and exactly the
 * data that follows. Returns the runs and how many bytes the map took.
 */
export async function readSparseMap(
  source: Pick<EntryReader, "read">,
  entrySize: number,
  realSize: number,
  path: string,
): Promise<{ runs: DataRun[]; mapBytes: number }> {
  const numbers: number[] = [];
  let pending = "";
  let mapBytes = 0;
  let wanted = 1;
  while (numbers.length < wanted) {
    if (mapBytes + BLOCK > entrySize) refuseRestore(`the sparse map of "${path}" runs past its entry`);
    const block = await source.read(BLOCK);
    if (block === undefined) refuseRestore(`the archive is truncated inside the sparse map of "${path}"`);
    mapBytes += BLOCK;
    const text = pending + block.toString("latin1");
    const lines = text.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (numbers.length >= wanted) break;
      if (!/^[0-9]{1,16}$/.test(line)) refuseRestore(`the sparse map of "${path}" is malformed`);
      numbers.push(Number(line));
      if (numbers.length === 1) {
        if ((numbers[0] as number) > MAX_RUNS) refuseRestore(`the sparse map of "${path}" lists over ${MAX_RUNS} runs`);
        wanted = 1 + 2 * (numbers[0] as number);
      }
    }
  }
  const runs: DataRun[] = [];
  let end = 0;
  let data = 0;
  for (let i = 1; i < numbers.length; i += 2) {
    const run = { offset: numbers[i] as number, length: numbers[i + 1] as number };
    if (run.offset < end || run.offset + run.length > realSize)
      refuseRestore(`the sparse map of "${path}" has runs out of order or past its size`);
    end = run.offset + run.length;
    data += run.length;
    runs.push(run);
  }
  if (mapBytes + data !== entrySize) refuseRestore(`the sparse map of "${path}" does not match its data`);
  return { runs, mapBytes };
}
