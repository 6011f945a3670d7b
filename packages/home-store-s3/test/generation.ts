import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// A home whose every file says which generation wrote it, so a restore can be
// checked to be one whole generation and never a mix of two.
const FILES = ["a.bin", "notes/b.bin", "notes/deep/c.bin", "d.txt"];

function contentOf(file: string, generation: number, fileBytes: number): Buffer {
  if (file.endsWith(".txt")) return Buffer.from(`generation ${generation}\n`);
  const bytes = Buffer.alloc(fileBytes);
  for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE((generation * 2654435761 + i) >>> 0, i);
  return bytes;
}

export function writeGeneration(dir: string, generation: number, fileBytes = 96 * 1024): void {
  rmSync(dir, { recursive: true, force: true });
  for (const file of FILES) {
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), contentOf(file, generation, fileBytes));
  }
}

/** The generation `dir` holds whole, or throws naming what is wrong. */
export function generationOf(dir: string, fileBytes = 96 * 1024): number {
  const text = readFileSync(join(dir, "d.txt"), "utf8");
  const generation = Number(/^generation (\d+)\n$/.exec(text)?.[1]);
  if (!Number.isInteger(generation)) throw new Error(`d.txt is not a generation marker: ${JSON.stringify(text)}`);
  for (const file of FILES) {
    if (!readFileSync(join(dir, file)).equals(contentOf(file, generation, fileBytes)))
      throw new Error(`${file} is not of generation ${generation}: a torn restore`);
  }
  const top = readdirSync(dir).sort();
  if (top.join(",") !== "a.bin,d.txt,notes") throw new Error(`unexpected entries: ${top.join(",")}`);
  return generation;
}
