import { randomBytes } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ContentKeyring,
  MemoryHomeRecords,
  ObjectAgentHomeStore,
  type ObjectAgentHomeStoreOptions,
} from "../src/index.js";
import { type ByteCountingRelay, startByteCountingRelay } from "./byte-counting-relay.js";
import { type LocalS3, s3ConfigFor, startLocalS3 } from "./local-s3.js";

// list/read of the object store (issue 29) on a format-2 home stored in a
// real S3 server: a 1 KiB file of a ~40 MiB home is listed and read with
// under 1 MiB moved from the server (counted by a TCP relay), tampered
// bytes are CHECKPOINT_CORRUPT, paths are checked like the tools' paths;
// a format-1 revision is browsed by a streamed scan of its archive.

const MIB = 1024 * 1024;
let s3: LocalS3;
let relay: ByteCountingRelay;
let base: string;
let source: string;
const records = new MemoryHomeRecords();
const keyring = new ContentKeyring(randomBytes(32));

function storeWith(options: Partial<ObjectAgentHomeStoreOptions> = {}) {
  return new ObjectAgentHomeStore({
    s3: s3ConfigFor(relay.port),
    bucket: s3.bucket,
    dataDir: join(base, `data-${randomBytes(4).toString("hex")}`),
    keyring,
    records,
    format: 2,
    ...options,
  });
}

async function rejection(promise: Promise<unknown>): Promise<AgentComputerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentComputerError);
  return error as AgentComputerError;
}

beforeAll(async () => {
  s3 = await startLocalS3("browse-homes");
  relay = await startByteCountingRelay(s3.port);
  base = mkdtempSync(join(tmpdir(), "browse-stored-home-"));
  source = join(base, "home");
  for (let d = 0; d < 20; d++) {
    mkdirSync(join(source, "projects", `p${d}`), { recursive: true });
    for (let f = 0; f < 30; f++) writeFileSync(join(source, "projects", `p${d}`, `f${f}.txt`), randomBytes(8 * 1024));
  }
  mkdirSync(join(source, "tools"));
  const block = randomBytes(MIB);
  for (let b = 0; b < 3; b++) {
    const fd = openSync(join(source, "tools", `blob-${b}.bin`), "w");
    for (let i = 0; i < 10; i++) writeSync(fd, block);
    closeSync(fd);
  }
  writeFileSync(join(source, "projects", "p3", "note.md"), randomBytes(1024));
  symlinkSync("/etc", join(source, "projects", "etc-link"));
  records.create({ homeKey: "browse", storageId: "st-browse" });
  await storeWith().checkpoint({ homeKey: "browse", source: { dir: source } });
}, 300_000);
afterAll(async () => {
  await relay.close();
  await s3.close();
  await rm(base, { recursive: true, force: true });
});

describe("ObjectAgentHomeStore list/read (format 2)", () => {
  it("lists a folder and reads a 1 KiB file of a ~40 MiB home moving under 1 MiB from the server", async () => {
    const store = storeWith();
    const before = relay.sent();
    const top = await store.list("browse", "");
    expect(top.map((e) => [e.name, e.kind])).toEqual([
      ["projects", "directory"],
      ["tools", "directory"],
    ]);
    const folder = await store.list("browse", "projects/p3");
    expect(folder).toHaveLength(31);
    expect(folder.find((e) => e.name === "note.md")).toMatchObject({
      kind: "file",
      size: 1024,
      path: "projects/p3/note.md",
    });
    const file = await store.read("browse", "projects/p3/note.md");
    const moved = relay.sent() - before;
    expect(Buffer.from(file.bytes).equals(readFileSync(join(source, "projects/p3/note.md")))).toBe(true);
    expect(file).toMatchObject({ size: 1024, revision: 1 });
    expect(moved).toBeLessThan(MIB);
    // The whole home is over 40 times that.
    expect((await store.list("browse", "tools")).reduce((sum, e) => sum + e.size, 0)).toBe(30 * MIB);
  });

  it("reads a range across a chunk boundary from just the two chunks that hold it", async () => {
    const store = storeWith();
    await store.list("browse", "tools");
    const before = relay.sent();
    const part = await store.read("browse", "tools/blob-1.bin", { range: { start: MIB - 10, end: MIB + 10 } });
    expect(relay.sent() - before).toBeLessThan(2 * MIB + 64 * 1024);
    expect(
      Buffer.from(part.bytes).equals(readFileSync(join(source, "tools/blob-1.bin")).subarray(MIB - 10, MIB + 10)),
    ).toBe(true);
    expect(part.size).toBe(10 * MIB);
  });

  it("checks paths like the tools' home paths, and never stores or follows a link", async () => {
    const store = storeWith();
    for (const bad of ["../x", "/etc/passwd", "a\0b", "projects/../../etc"])
      expect((await rejection(store.read("browse", bad))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(store.list("browse", "/etc"))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(store.read("browse", "projects"))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(store.list("browse", "projects/p3/note.md"))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(store.read("browse", "projects/missing.txt"))).code).toBe("NOT_FOUND");
    // The planted link to /etc was never checkpointed: not listed, not readable.
    expect((await store.list("browse", "projects")).map((e) => e.name)).not.toContain("etc-link");
    expect((await rejection(store.read("browse", "projects/etc-link/passwd"))).code).toBe("NOT_FOUND");
  });

  it("refuses a tampered chunk or manifest with CHECKPOINT_CORRUPT, never wrong bytes", async () => {
    const store = storeWith();
    const keys = await s3.keys("homes/st-browse/");
    const manifestKey = keys.find((k) => /\/1\/[0-9a-f]{24}$/.test(k)) as string;
    const get = async (key: string) =>
      Buffer.from(
        await (
          (await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body as {
            transformToByteArray(): Promise<Uint8Array>;
          }
        ).transformToByteArray(),
      );
    const put = (key: string, body: Buffer) =>
      s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
    // Which chunk holds note.md: the only one a read of it fetches (a small file's lies in a pack: its range).
    const fetched: { key: string; at: number }[] = [];
    const spy = (store as unknown as { s3: { send: (c: unknown) => unknown } }).s3;
    const send = spy.send.bind(spy);
    spy.send = (command: unknown) => {
      const input = (command as { input?: { Key?: string; Range?: string } }).input;
      if (command instanceof GetObjectCommand && input?.Key?.includes("/chunks/"))
        fetched.push({ key: input.Key, at: Number(/^bytes=(\d+)-/.exec(input.Range ?? "")?.[1] ?? 0) });
      return send(command);
    };
    await store.read("browse", "projects/p3/note.md");
    expect(fetched).toHaveLength(1);
    const { key: chunkKey, at } = fetched[0] as { key: string; at: number };
    const original = await get(chunkKey);
    const flipped = Buffer.from(original);
    flipped[at + 40] = (flipped[at + 40] as number) ^ 1;
    await put(chunkKey, flipped);
    expect((await rejection(store.read("browse", "projects/p3/note.md"))).code).toBe("CHECKPOINT_CORRUPT");
    await put(chunkKey, original);

    const manifest = await get(manifestKey);
    const bad = Buffer.from(manifest);
    bad[bad.length >> 1] = (bad[bad.length >> 1] as number) ^ 1;
    await put(manifestKey, bad);
    expect((await rejection(storeWith().list("browse", ""))).code).toBe("CHECKPOINT_CORRUPT");
    await put(manifestKey, manifest);
    expect((await storeWith().list("browse", "")).length).toBe(2);
  });

  it("browses a format-1 revision by a streamed scan of its archive, and a home without a checkpoint is NOT_FOUND", async () => {
    records.create({ homeKey: "old", storageId: "st-old" });
    const store = storeWith({ format: 1 });
    expect((await rejection(store.list("old", ""))).code).toBe("NOT_FOUND");
    const small = join(base, "small");
    mkdirSync(join(small, "notes"), { recursive: true });
    writeFileSync(join(small, "a.txt"), "a");
    writeFileSync(join(small, "notes", "b.md"), "bee");
    symlinkSync("/etc", join(small, "notes", "etc"));
    await store.checkpoint({ homeKey: "old", source: { dir: small } });
    // The link was never packed, so it is neither listed nor readable.
    expect((await storeWith().list("old", "")).map((e) => [e.name, e.kind])).toEqual([
      ["a.txt", "file"],
      ["notes", "directory"],
    ]);
    expect((await store.list("old", "notes")).map((e) => e.name)).toEqual(["b.md"]);
    const read = await storeWith().read("old", "notes/b.md", { range: { start: 1, end: 3 } });
    expect(read).toMatchObject({ path: "notes/b.md", size: 3, revision: 1 });
    expect(Buffer.from(read.bytes).toString()).toBe("ee");
    expect((await rejection(store.read("old", "notes/etc"))).code).toBe("NOT_FOUND");
    expect((await rejection(store.read("old", "../etc/passwd"))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(store.list("old", "/etc"))).code).toBe("INVALID_ARGUMENT");
    // A flipped byte in the stored archive: CHECKPOINT_CORRUPT, never wrong bytes.
    const [objectKey] = (await s3.keys("homes/st-old/1/")).filter((k) => !k.endsWith("committed"));
    const got = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: objectKey }));
    const archive = Buffer.from(
      await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    );
    archive[100] = (archive[100] as number) ^ 1;
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: objectKey, Body: archive }));
    expect((await rejection(storeWith().read("old", "a.txt"))).code).toBe("CHECKPOINT_CORRUPT");
    expect((await rejection(storeWith().list("old", ""))).code).toBe("CHECKPOINT_CORRUPT");
  });
});
