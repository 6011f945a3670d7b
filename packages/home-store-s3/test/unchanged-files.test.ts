import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";
import { treeOf } from "./home-tree.js";
import { type LocalS3, startLocalS3 } from "./local-s3.js";

// A checkpoint names the chunks of a staged file without reading it when the
// file is the cache's own inode, untouched since the committed revision
// stamped it (src/store/file-stamps.ts). What these tests watch is which
// staged files the snapshot opens: `openSync` of node:fs is wrapped (not
// replaced) for this package's sources, since nothing outside the process
// can see a read of a file the store's own staging folder holds. Whether a
// checkpoint is right is checked the way a user would: a fresh host restores
// it and compares every byte with the source.

const opened = vi.hoisted(() => ({ paths: [] as string[] }));
vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  // Reads only: staging writes the same folder's files (the codec is this repository's source here too).
  const openSync = (path: fs.PathLike, flags?: fs.OpenMode, ...rest: unknown[]) => {
    const writes = real.constants.O_WRONLY | real.constants.O_RDWR;
    if (typeof flags === "number" && (flags & writes) === 0) opened.paths.push(String(path));
    return (real.openSync as (...args: unknown[]) => number)(path, flags, ...rest);
  };
  return { ...real, default: { ...real, openSync }, openSync };
});

let s3: LocalS3;
let base: string;
let homes = 0;

beforeAll(async () => {
  s3 = await startLocalS3("unchanged-files");
  base = fs.mkdtempSync(join(tmpdir(), "unchanged-files-"));
});
afterAll(async () => {
  await s3.close();
  await rm(base, { recursive: true, force: true });
});

/** A home of 24 small files and one of three chunks, a store writing it, and a way to restore it on a fresh host. */
function setUp() {
  const homeKey = `home-${++homes}`;
  const records = new MemoryHomeRecords();
  records.create({ homeKey, storageId: `st-${homeKey}` });
  const keyring = new ContentKeyring(Buffer.alloc(32, 3));
  const store = (dataDir: string) =>
    new ObjectAgentHomeStore({
      s3: s3.config,
      bucket: s3.bucket,
      dataDir: join(base, homeKey, dataDir),
      keyring,
      records,
    });
  const source = join(base, homeKey, "source");
  fs.mkdirSync(join(source, "notes"), { recursive: true });
  for (let i = 0; i < 24; i++) fs.writeFileSync(join(source, "notes", `n${i}.txt`), randomBytes(20_000 + i));
  fs.writeFileSync(join(source, "big.bin"), randomBytes(2 * 1024 * 1024 + 5000));
  const writer = store("writer");
  /** Checkpoints the source; the home-relative paths of the staged files the snapshot opened. */
  const checkpoint = async (from = writer) => {
    opened.paths.length = 0;
    await from.checkpoint({ homeKey, source: { dir: source } });
    return opened.paths.flatMap((path) => {
      const staged = /\/homes\/\.[^/]+\.restore-[0-9a-f]+\/(.+)$/.exec(path);
      return staged ? [staged[1] as string] : [];
    });
  };
  let restores = 0;
  const restoredOnFreshHost = async () => {
    const target = join(base, homeKey, `restored-${++restores}`);
    await store(`fresh-${restores}`).restore({ homeKey, target: { dir: target } });
    return treeOf(target);
  };
  return { homeKey, source, writer, store, checkpoint, restoredOnFreshHost };
}

/** Writes new bytes of the same length into `path` and puts its mtime back, as a bot could to hide a change. */
function rewriteKeepingTimes(path: string, bytes: Buffer): void {
  const before = fs.statSync(path);
  expect(bytes.length).toBe(before.size);
  fs.writeFileSync(path, bytes);
  fs.utimesSync(path, before.atime, before.mtime);
}

describe("a checkpoint after a few changes", () => {
  it("reads only the files that changed, and a fresh host restores the home exactly", async () => {
    const { source, checkpoint, restoredOnFreshHost } = setUp();
    expect(await checkpoint()).toHaveLength(25);
    fs.writeFileSync(join(source, "notes", "n3.txt"), randomBytes(9000));
    fs.writeFileSync(join(source, "notes", "added.txt"), randomBytes(100));
    expect((await checkpoint()).sort()).toEqual(["notes/added.txt", "notes/n3.txt"]);
    expect(await restoredOnFreshHost()).toEqual(treeOf(source));
    // Nothing changed: nothing read.
    expect(await checkpoint()).toEqual([]);
    expect(await restoredOnFreshHost()).toEqual(treeOf(source));
  });

  it("reads a file another writer changed in the cache, however it hid the change, and checkpoints what is there", async () => {
    const { homeKey, source, writer, checkpoint, restoredOnFreshHost } = setUp();
    await checkpoint();
    // A second writer of the cache folder (a computer that mounts it, say) rewrites a note and the big file's
    // last chunk with bytes of the same length and puts the mtimes back. The source gets the same bytes with the
    // same times, so staging links the cache's files: only their change times tell they are not the revision's.
    const cache = writer.homeDir(homeKey);
    for (const [path, at] of [
      ["notes/n5.txt", 0],
      ["big.bin", 2 * 1024 * 1024],
    ] as const) {
      const bytes = fs.readFileSync(join(cache, path));
      randomBytes(4000).copy(bytes, at);
      rewriteKeepingTimes(join(cache, path), bytes);
      rewriteKeepingTimes(join(source, path), bytes);
    }
    expect((await checkpoint()).sort()).toEqual(["big.bin", "notes/n5.txt"]);
    expect(await restoredOnFreshHost()).toEqual(treeOf(source));
  });

  it("reads every file when the cache's stamps are not the committed revision's", async () => {
    const { source, store, writer, checkpoint, restoredOnFreshHost } = setUp();
    await checkpoint();
    // Another host checkpoints revision 2: the writer's cache and stamps are revision 1's.
    fs.writeFileSync(join(source, "notes", "n7.txt"), randomBytes(700));
    await checkpoint(store("other-host"));
    fs.writeFileSync(join(source, "notes", "n8.txt"), randomBytes(800));
    const read = await checkpoint(writer);
    expect(read).toHaveLength(25);
    expect(await restoredOnFreshHost()).toEqual(treeOf(source));
  });

  it("reads only the changed files after a restore, which stamps the files it wrote", async () => {
    const { homeKey, source, store, checkpoint, restoredOnFreshHost } = setUp();
    await checkpoint();
    const reader = store("reader");
    await reader.latest(homeKey);
    fs.writeFileSync(join(source, "notes", "n9.txt"), randomBytes(900));
    expect(await checkpoint(reader)).toEqual(["notes/n9.txt"]);
    expect(await restoredOnFreshHost()).toEqual(treeOf(source));
  });
});
