import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";
import { treeOf } from "./home-tree.js";
import { type LocalS3, s3ConfigFor, startLocalS3 } from "./local-s3.js";

// A fresh host's restore of a home whose packs interleave: each incremental
// checkpoint packs the small files it changed, which lie all over the home,
// so the restore goes back and forth between the first checkpoint's packs
// and the later ones (pack-reader.ts). Every GET the store sends is counted
// by a middleware on its own S3 client, against s3rver.

let s3: LocalS3;
let base: string;

beforeAll(async () => {
  s3 = await startLocalS3("pack-reads");
  base = mkdtempSync(join(tmpdir(), "pack-reads-"));
});
afterAll(async () => {
  await s3.close();
  await rm(base, { recursive: true, force: true });
});

describe("a fresh host's restore of interleaved packs", () => {
  it("downloads each pack once, and reads a chunk alone from a pack it needs once", async () => {
    const gets: { key: string; range: string | undefined }[] = [];
    const client = new S3Client(s3ConfigFor(s3.port));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: string; Range?: string };
        if (context.commandName === "GetObjectCommand") gets.push({ key: input.Key ?? "", range: input.Range });
        return next(args);
      },
      { step: "initialize", name: "countGets" },
    );
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "woven", storageId: "st-woven" });
    // One pack ahead and three held: a home of a few packs already interleaves past that.
    const store = (dataDir: string) =>
      new ObjectAgentHomeStore({
        s3: client,
        bucket: s3.bucket,
        dataDir: join(base, dataDir),
        keyring: new ContentKeyring(Buffer.alloc(32, 7)),
        records,
        chunkConcurrency: 1,
      });
    const source = join(base, "source");
    mkdirSync(source);
    const files = Array.from({ length: 400 }, (_, i) => join(source, `f${String(i).padStart(3, "0")}.txt`));
    for (const file of files) writeFileSync(file, randomBytes(30 * 1024));
    const writer = store("writer");
    await writer.checkpoint({ homeKey: "woven", source: { dir: source } });
    // Four rounds, each changing files at the start, middle and end of the home: a pack each.
    for (let round = 0; round < 4; round++) {
      for (const at of [round, 130 + round, 260 + round, 390 + round])
        writeFileSync(files[at] as string, randomBytes(30 * 1024));
      await writer.checkpoint({ homeKey: "woven", source: { dir: source } });
    }
    // A fifth changes one file: its pack holds one chunk the restore needs.
    writeFileSync(files[200] as string, randomBytes(30 * 1024));
    await writer.checkpoint({ homeKey: "woven", source: { dir: source } });

    gets.length = 0;
    const target = join(base, "restored");
    await store("fresh").restore({ homeKey: "woven", target: { dir: target } });
    expect(treeOf(target)).toEqual(treeOf(source));
    const wholePacks = gets.filter((get) => get.key.includes("/chunks/") && get.range === undefined).map((g) => g.key);
    expect(wholePacks.length).toBeGreaterThan(3);
    expect(wholePacks.length, wholePacks.join("\n")).toBe(new Set(wholePacks).size);
    const alone = gets.filter((get) => get.key.includes("/chunks/") && get.range !== undefined);
    expect(alone).toHaveLength(1);
    expect(wholePacks).not.toContain(alone[0]?.key);
    client.destroy();
  }, 120_000);
});
