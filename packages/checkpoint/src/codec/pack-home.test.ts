import { execFileSync } from "node:child_process";
import { lstat, mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { digestTree } from "./home-tree.test-helpers.js";
import { isTransientProfilePath, packHome } from "./pack-home.js";
import { restoreHome } from "./restore-home.js";

let root: string;
let home: string;
const server = createServer();
const nfc = "caf\u00e9.txt";
const nfd = "cafe\u0301.txt";
const longPath = `${"deep-folder-name/".repeat(12)}${"f".repeat(200)}`;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-pack-"));
  home = join(root, "home");
  await mkdir(join(home, "work", "Cache"), { recursive: true });
  await writeFile(join(home, "Makefile"), "upper");
  await writeFile(join(home, "makefile"), "lower");
  await writeFile(join(home, nfc), "composed");
  await writeFile(join(home, nfd), "decomposed");
  await writeFile(join(home, "work", "SingletonLock"), "kept outside profiles");
  await writeFile(join(home, "work", "Cache", "data"), "kept outside profiles");
  await writeFile(join(home, "back\\slash"), "a legal Linux name");
  await mkdir(join(home, longPath, ".."), { recursive: true });
  await writeFile(join(home, longPath), "long");
  await writeFile(join(home, "empty"), "");
  const profile = join(home, ".browser-profiles", "bot-1", "Default");
  await mkdir(join(profile, "Cache"), { recursive: true });
  await mkdir(join(profile, "Code Cache", "js"), { recursive: true });
  await writeFile(join(profile, "Cache", "data_0"), "cache");
  await writeFile(join(profile, "Code Cache", "js", "x"), "cache");
  await writeFile(join(profile, "Cookies"), "keep me");
  await writeFile(join(home, ".browser-profiles", "bot-1", "SingletonCookie"), "lock");
  await writeFile(join(profile, "LOCK"), "");
  await symlink("/etc/passwd", join(home, "link-out"));
  await symlink("Makefile", join(home, "link-in"));
  execFileSync("mkfifo", [join(home, "pipe")]);
  await new Promise<void>((resolve) => server.listen(join(home, "sock"), resolve));
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function bytesOf(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of packHome(dir).tar) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("packHome", () => {
  it("packs directories and regular files only, counting what it skipped", async () => {
    const packed = packHome(home);
    for await (const _ of packed.tar) {
      // drain
    }
    const stats = await packed.stats;
    expect(stats.skipped).toEqual({ symlinks: 2, sockets: 1, fifos: 1, devices: 0 });
    expect(stats.transient).toBe(4); // Cache/, Code Cache/, SingletonCookie, LOCK
    expect(stats.files).toBe(10);
    expect(stats.changed).toBe(0);
  });

  it("gives the same bytes for the same tree, in a stable order GNU tar reads", async () => {
    const first = await bytesOf(home);
    expect((await bytesOf(home)).equals(first)).toBe(true);
    const names = execFileSync("tar", ["-t"], { input: first }).toString().trim().split("\n");
    expect(names).toContain(longPath);
    expect(names.indexOf("Makefile")).toBeLessThan(names.indexOf("makefile"));
    expect(names.filter((n) => n.startsWith(".browser-profiles/"))).toEqual([
      ".browser-profiles/",
      ".browser-profiles/bot-1/",
      ".browser-profiles/bot-1/Default/",
      ".browser-profiles/bot-1/Default/Cookies",
    ]);
  });

  it("round-trips case- and normalisation-distinct names, long paths and empty files", async () => {
    const target = join(root, "restored");
    await restoreHome(packHome(home).tar, target);
    const restored = await digestTree(target);
    const source = await digestTree(home);
    for (const [path, digest] of source) {
      if (/^(link-|pipe|sock)/.test(path) || isTransientProfilePath(path)) expect(restored.has(path)).toBe(false);
      else expect(restored.get(path), path).toBe(digest);
    }
    expect(restored.get(nfc)).not.toBe(restored.get(nfd));
    expect(restored.get("Makefile")).not.toBe(restored.get("makefile"));
    expect(restored.get("work/SingletonLock")).toMatch(/^file/);
    expect(restored.get("work/Cache/data")).toMatch(/^file/);
  });

  it("keeps transient-looking names outside .browser-profiles", () => {
    expect(isTransientProfilePath(".browser-profiles/bot/SingletonLock")).toBe(true);
    expect(isTransientProfilePath(".browser-profiles/bot/Default/GPUCache/x")).toBe(true);
    expect(isTransientProfilePath(".browser-profiles/SingletonLock")).toBe(false);
    expect(isTransientProfilePath("work/.browser-profiles/bot/LOCK")).toBe(false);
    expect(isTransientProfilePath("Cache/x")).toBe(false);
  });

  it("asks `reuse` of each regular file as it is open, leaving out the ones it keeps", async () => {
    const asked = new Map<string, bigint>();
    const packed = packHome(home, {
      reuse: (path, stat) => {
        asked.set(path, stat.ino);
        return path === "Makefile" || path === longPath;
      },
    });
    const restored = join(root, "reused");
    await restoreHome(packed.tar, restored);
    const stats = await packed.stats;
    expect([stats.files, stats.reused]).toEqual([8, 2]);
    // Regular files only, never links or the transient ones, each with the inode that was open.
    expect(asked.size).toBe(10);
    expect(asked.has("link-in")).toBe(false);
    expect(asked.get("makefile")).toBe((await lstat(join(home, "makefile"), { bigint: true })).ino);
    const tree = await digestTree(restored);
    expect(tree.has("Makefile")).toBe(false);
    expect(tree.has(longPath)).toBe(false);
    expect(tree.get("makefile")).toBe((await digestTree(home)).get("makefile"));
  });

  it("fails with NOT_FOUND for a missing home and INVALID_ARGUMENT for bad options", async () => {
    await expect(bytesOf(join(root, "missing"))).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(() => packHome("")).toThrow(/dir/);
  });
});
