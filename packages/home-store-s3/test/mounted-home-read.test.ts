import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkKeysOf } from "../src/chunked/chunk-keys.js";
import type { ChunkRef } from "../src/chunked/home-manifest.js";
import type { KnownChunks } from "../src/chunked/home-snapshot.js";
import { readMountedHome } from "../src/store/mounted-home-read.js";

// readMountedHome: a live home read through packHome's walk, the files a
// stamp vouches for left out of the tar and carried (mounted-checkpoint.test.ts
// covers the store around it).

const keys = chunkKeysOf(randomBytes(32), "st-read");
let base: string;
beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "mounted-home-read-"));
});
afterAll(() => rm(base, { recursive: true, force: true }));

let homes = 0;
function writeHome(): string {
  const home = join(base, `home-${++homes}`);
  mkdirSync(join(home, "notes"), { recursive: true });
  for (let i = 0; i < 5; i++) writeFileSync(join(home, "notes", `n${i}.txt`), randomBytes(300 + i));
  writeFileSync(join(home, "big.bin"), randomBytes(3 * 1024 * 1024 + 5));
  writeFileSync(join(home, "zz-last"), "last");
  return home;
}

async function read(home: string, known: KnownChunks = () => undefined, limits = {}) {
  const offered: string[] = [];
  const result = await readMountedHome(home, {
    keys,
    sink: async (name) => {
      offered.push(name);
    },
    known,
    limits,
  });
  return { ...result, offered };
}

describe("readMountedHome", () => {
  it("leaves the files `known` vouches for out of the read, and gives the entries and places a full read gives", async () => {
    const home = writeHome();
    const full = await read(home);
    const chunksOf = new Map(
      full.snapshot.entries.flatMap((e) => (e.kind === "file" ? [[e.path, e.chunks] as [string, ChunkRef[]]] : [])),
    );
    const vouched = new Set(["big.bin", "notes/n1.txt"]);
    const asked: string[] = [];
    const partial = await read(home, (path) => {
      asked.push(path);
      return vouched.has(path) ? chunksOf.get(path) : undefined;
    });
    expect(partial.snapshot.entries).toEqual(full.snapshot.entries);
    expect([partial.files, partial.bytes]).toEqual([full.files, full.bytes]);
    expect(asked.sort()).toEqual([...chunksOf.keys()].sort());
    // Not a chunk of the vouched-for files was read (each of them is unique: random bytes).
    const carried = [...vouched].flatMap((path) => (chunksOf.get(path) ?? []).map((c) => c.name));
    expect(carried).toHaveLength(5);
    expect(partial.offered.filter((name) => carried.includes(name))).toEqual([]);
    expect(partial.offered).toHaveLength(full.offered.length - carried.length);
    for (const name of carried) expect(partial.snapshot.places.get(name)).toEqual(full.snapshot.places.get(name));
  });

  it("stamps each file as it was open, but none changed within two seconds of the read's start", async () => {
    const home = writeHome();
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    writeFileSync(join(home, "notes/n2.txt"), "just now");
    const { stamps } = await read(home);
    const stamped = new Map(stamps.map(([path, ino, ctimeNs]) => [path, `${ino} ${ctimeNs}`]));
    expect(stamped.has("notes/n2.txt")).toBe(false);
    expect([...stamped.keys()].sort()).toEqual(
      ["big.bin", "notes/n0.txt", "notes/n1.txt", "notes/n3.txt", "notes/n4.txt", "zz-last"].sort(),
    );
    const big = lstatSync(join(home, "big.bin"), { bigint: true });
    expect(stamped.get("big.bin")).toBe(`${big.ino} ${big.ctimeNs}`);
  });

  it("counts the carried files against the limits", async () => {
    const home = writeHome();
    const full = await read(home);
    const entries = new Map(full.snapshot.entries.map((e) => [e.path, e]));
    const carryAll: KnownChunks = (path) => {
      const entry = entries.get(path);
      return entry?.kind === "file" ? entry.chunks : undefined;
    };
    await expect(read(home, carryAll, { maxEntries: full.snapshot.entries.length - 1 })).rejects.toMatchObject({
      code: "LIMIT_EXCEEDED",
    });
    await expect(read(home, carryAll, { maxTotalBytes: full.bytes - 1 })).rejects.toMatchObject({
      code: "LIMIT_EXCEEDED",
    });
    await expect(read(home, carryAll, { maxFileBytes: 3 * 1024 * 1024 })).rejects.toMatchObject({
      code: "LIMIT_EXCEEDED",
    });
    expect((await read(home, carryAll)).offered).toEqual([]);
  });
});
