import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { digestTree } from "./home-tree.test-helpers.js";
import { packHome } from "./pack-home.js";
import { restoreHome, stageHome } from "./restore-home.js";

// stageHome's `linkUnchanged` (unchanged-file.ts): a file the target already
// holds is linked only when every byte is the same. The cases a bot could
// aim at are the ones that keep size, mode and mtime and change the bytes.

let root: string;
let source: string;
let target: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-link-unchanged-"));
  source = join(root, "source");
  target = join(root, "target");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** More small files than one writer batch (so its threads run), and two over the small-file size. */
async function writeSource(smallFiles: number): Promise<void> {
  await mkdir(join(source, "notes"), { recursive: true });
  for (let i = 0; i < smallFiles; i++) await writeFile(join(source, "notes", `n${i}.txt`), randomBytes(200 + i));
  await writeFile(join(source, "big-a.bin"), randomBytes(3 * 1024 * 1024 + 17));
  await writeFile(join(source, "big-b.bin"), randomBytes(3 * 1024 * 1024 + 17));
}

/** New bytes of the same length, with the old mtime put back: only the content says it changed. */
async function rewriteKeepingMtime(path: string, at: number): Promise<void> {
  const before = await stat(path);
  const bytes = await readFile(path);
  bytes[at] = (bytes[at] as number) ^ 0xff;
  await writeFile(path, bytes);
  await utimes(path, before.atime, before.mtime);
}

async function inode(path: string): Promise<number> {
  return (await stat(path)).ino;
}

describe.each([
  ["on the writer threads", 700],
  ["on the calling thread (fewer files than a batch)", 5],
])("stageHome with linkUnchanged, small files %s", (_where, smallFiles) => {
  it("links only files with the same bytes, mode and mtime, and the swapped-in home is the source", async () => {
    await writeSource(smallFiles);
    await restoreHome(packHome(source).tar, target);
    await rewriteKeepingMtime(join(source, "notes", "n1.txt"), 100);
    await rewriteKeepingMtime(join(source, "big-a.bin"), 2 * 1024 * 1024 + 5);
    await chmod(join(source, "notes", "n2.txt"), 0o600);
    await writeFile(join(source, "notes", "new.txt"), "new");
    await rm(join(source, "notes", "n3.txt"));

    const staged = await stageHome(packHome(source).tar, target, {}, { linkUnchanged: true });
    const inStaging = (path: string) => join(staged.stagingDir, path);
    expect(await inode(inStaging("notes/n0.txt"))).toBe(await inode(join(target, "notes/n0.txt")));
    expect(await inode(inStaging("big-b.bin"))).toBe(await inode(join(target, "big-b.bin")));
    for (const changed of ["notes/n1.txt", "big-a.bin", "notes/n2.txt"])
      expect(await inode(inStaging(changed)), changed).not.toBe(await inode(join(target, changed)));
    await staged.swapIn();

    expect(await digestTree(target)).toEqual(await digestTree(source));
    for (const path of ["notes/n0.txt", "notes/n2.txt", "big-a.bin", "big-b.bin"]) {
      const [restored, original] = await Promise.all([stat(join(target, path)), stat(join(source, path))]);
      expect(restored.mode & 0o777, path).toBe(original.mode & 0o777);
      // The archive keeps whole seconds.
      expect(restored.mtimeMs, path).toBe(Math.floor(original.mtimeMs / 1000) * 1000);
      expect(restored.nlink, path).toBe(1);
    }
  });

  it("leaves the previous copy as it was when the staged home is discarded", async () => {
    await writeSource(smallFiles);
    await restoreHome(packHome(source).tar, target);
    const before = await digestTree(target);
    await rewriteKeepingMtime(join(source, "big-a.bin"), 10);
    const staged = await stageHome(packHome(source).tar, target, {}, { linkUnchanged: true });
    await staged.discard();
    expect(await digestTree(target)).toEqual(before);
    expect((await stat(join(target, "notes/n0.txt"))).nlink).toBe(1);
  });
});

describe("stageHome without linkUnchanged", () => {
  it("writes every file anew, as restoreHome always has", async () => {
    await writeSource(5);
    await restoreHome(packHome(source).tar, target);
    const staged = await stageHome(packHome(source).tar, target);
    expect(await inode(join(staged.stagingDir, "big-b.bin"))).not.toBe(await inode(join(target, "big-b.bin")));
    expect(await inode(join(staged.stagingDir, "notes/n0.txt"))).not.toBe(await inode(join(target, "notes/n0.txt")));
    await staged.discard();
  });
});
