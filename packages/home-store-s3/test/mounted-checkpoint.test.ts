import { randomBytes } from "node:crypto";
import {
  closeSync,
  cpSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { chunkKeysOf } from "../src/chunked/chunk-keys.js";
import type { HomeManifestEntry } from "../src/chunked/home-manifest.js";
import { openManifest } from "../src/chunked/sealed-manifest.js";
import { ContentKeyring, MemoryHomeRecords } from "../src/index.js";
import { treeOf } from "./home-tree.js";
import { storesOn, useLocalS3 } from "./local-s3.js";

// A mounted home (the cache folder a provider mounts, live while the bot
// runs) is checkpointed without a copy: its chunks are named from the
// packer's tar as it streams (the codec's readHomeArchive). Against a
// real S3 server (s3rver).

const keyring = new ContentKeyring(randomBytes(32));

const suite = useLocalS3("mounted-homes", "mounted-checkpoint");
const fresh = suite.fresh;

const storeWith = storesOn(suite, { keyring });

/** Small files, a 3 MiB file, an empty one, a sparse one, a folder only its owner reads, and a link out of the home. */
function writeHome(dir: string): void {
  mkdirSync(join(dir, "notes/deep"), { recursive: true });
  mkdirSync(join(dir, "private"), { mode: 0o700 });
  for (let i = 0; i < 30; i++)
    writeFileSync(join(dir, "notes", `n${i}.txt`), `note ${i} ${randomBytes(200).toString("hex")}\n`);
  writeFileSync(join(dir, "notes/deep/big.bin"), randomBytes(3 * 1024 * 1024 + 17));
  writeFileSync(join(dir, "private/key"), "k", { mode: 0o600 });
  writeFileSync(join(dir, "empty"), "");
  const sparse = openSync(join(dir, "disk.img"), "w");
  writeSync(sparse, "data", 2 * 1024 * 1024);
  ftruncateSync(sparse, 6 * 1024 * 1024);
  closeSync(sparse);
  symlinkSync("/etc/passwd", join(dir, "planted"));
}

async function manifestOf(records: MemoryHomeRecords, homeKey: string, revision: number) {
  const record = await records.read(homeKey);
  const storageId = record?.storageId as string;
  const keys = chunkKeysOf(await keyring.unwrap(record?.wrappedDataKey as string, storageId), storageId);
  const key = (await suite.s3.keys(`homes/${storageId}/${revision}/`)).find((k) => !k.endsWith("/committed")) as string;
  const got = await suite.s3.client.send(new GetObjectCommand({ Bucket: suite.s3.bucket, Key: key }));
  const sealed = Buffer.from(
    await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
  );
  return openManifest(keys, revision, sealed).manifest;
}

/**
 * Entries without chunk names, which differ between homes (each has its own
 * keys), and without folder times, which no restore keeps (writing a
 * folder's files moves its time): a folder checkpoint records its staged
 * copy's, a mounted one the home's own.
 */
const shapeOf = (entries: readonly HomeManifestEntry[]) =>
  entries.map((entry) =>
    entry.kind === "file" ? { ...entry, chunks: entry.chunks.map((c) => c.size) } : { ...entry, mtime: "any" },
  );

describe("a mounted home's checkpoint", () => {
  it("gives the manifest a folder checkpoint of the same tree gives, stages nothing, and restores to that tree", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "mounted", storageId: "st-mounted" });
    records.create({ homeKey: "folder", storageId: "st-folder" });
    const live = storeWith(records);
    writeHome(live.homeDir("mounted"));
    const folder = fresh("folder-source");
    cpSync(live.homeDir("mounted"), folder, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });

    const saved = await live.checkpoint({ homeKey: "mounted", source: { mounted: true } });
    await storeWith(records).checkpoint({ homeKey: "folder", source: { dir: folder } });
    const mounted = await manifestOf(records, "mounted", 1);
    expect(shapeOf(mounted.entries)).toEqual(shapeOf((await manifestOf(records, "folder", 1)).entries));
    expect(mounted.entries.map((e) => e.path)).not.toContain("planted");
    expect(saved).toMatchObject({ revision: 1, mounted: true, files: 34 });
    // Beside the cache, only the store's own records: no copy of the home.
    expect(readdirSync(live.dataDir).sort()).toEqual(["home-revisions", "homes"]);

    const elsewhere = fresh("restored");
    await storeWith(records).restore({ homeKey: "mounted", target: { dir: elsewhere } });
    const { planted: _link, ...withoutLink } = treeOf(live.homeDir("mounted"));
    expect(treeOf(elsewhere)).toEqual(withoutLink);
  });

  it("uploads only what changed the next time", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "again", storageId: "st-again" });
    const uploaded: number[] = [];
    const live = storeWith(records, { onStage: (e) => void (e.stage === "uploaded" && uploaded.push(e.bytes)) });
    writeHome(live.homeDir("again"));
    await live.checkpoint({ homeKey: "again", source: { mounted: true } });
    writeFileSync(join(live.homeDir("again"), "notes/n3.txt"), "changed\n");
    expect((await live.checkpoint({ homeKey: "again", source: { mounted: true } })).revision).toBe(2);
    expect(uploaded[0]).toBeGreaterThan(3 * 1024 * 1024);
    // One tiny chunk in a pack, and the manifest.
    expect(uploaded[1]).toBeLessThan(16 * 1024);
  });

  it("carries the files untouched since its last checkpoint, and reads again each one changed since, at any size", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "stamped", storageId: "st-stamped" });
    const live = storeWith(records);
    const home = live.homeDir("stamped");
    writeHome(home);
    // Only files changed over two seconds before a checkpoint are stamped (mounted-home-read.ts).
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await live.checkpoint({ homeKey: "stamped", source: { mounted: true } });
    // New bytes at the same size: only the change time tells.
    writeFileSync(join(home, "notes/n3.txt"), randomBytes(readFileSync(join(home, "notes/n3.txt")).length));
    const big = openSync(join(home, "notes/deep/big.bin"), "r+");
    writeSync(big, randomBytes(64), 0, 64, 1024 * 1024 + 5);
    closeSync(big);
    await live.checkpoint({ homeKey: "stamped", source: { mounted: true } });

    const elsewhere = fresh("restored");
    await storeWith(records).restore({ homeKey: "stamped", target: { dir: elsewhere } });
    const { planted: _link, ...withoutLink } = treeOf(home);
    expect(treeOf(elsewhere)).toEqual(withoutLink);
    // The 32 untouched files keep their stamps; the two just changed get none until they are older.
    const index = JSON.parse(readFileSync(join(live.dataDir, "home-revisions", "stamped.chunks.json"), "utf8"));
    const stamped = (index.liveStamps as [string][]).map(([path]) => path);
    expect(stamped).not.toContain("notes/n3.txt");
    expect(stamped).not.toContain("notes/deep/big.bin");
    expect(index.liveStamps).toHaveLength(32);
  });

  it("refuses a home over the store's limits with nothing committed and the home as it was", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "over", storageId: "st-over" });
    const live = storeWith(records, { limits: { maxEntries: 10 } });
    writeHome(live.homeDir("over"));
    const before = treeOf(live.homeDir("over"));
    await expect(live.checkpoint({ homeKey: "over", source: { mounted: true } })).rejects.toMatchObject({
      code: "LIMIT_EXCEEDED",
    });
    expect(await live.latest("over")).toBeUndefined();
    expect((await records.read("over"))?.revision).toBe(0);
    expect(treeOf(live.homeDir("over"))).toEqual(before);
  });
});
