import { randomBytes } from "node:crypto";
import {
  closeSync,
  createReadStream,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_MANIFEST_BYTES } from "../src/chunked/sealed-manifest.js";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";
import { type ByteCountingRelay, startByteCountingRelay } from "./byte-counting-relay.js";
import { type LocalS3, s3ConfigFor, startLocalS3 } from "./local-s3.js";

// Issue 45, finding 7: whoever can write the bucket chooses the size of the
// small objects the store reads (manifests, chunks, pointers). Each is
// refused from its stated size before its body is read; bytes the server
// sends are counted by a TCP relay in front of it.

const MIB = 1024 * 1024;
let s3: LocalS3;
let relay: ByteCountingRelay;
let base: string;
const keyring = new ContentKeyring(randomBytes(32));

beforeAll(async () => {
  s3 = await startLocalS3("oversized-homes");
  relay = await startByteCountingRelay(s3.port);
  base = mkdtempSync(join(tmpdir(), "oversized-objects-"));
});
afterAll(async () => {
  await relay.close();
  await s3.close();
  await rm(base, { recursive: true, force: true });
});

/** A format-2 home with one committed revision, and the store that wrote it (through the relay). */
async function committedHome(homeKey: string) {
  const records = new MemoryHomeRecords();
  const storageId = `st-${homeKey}`;
  records.create({ homeKey, storageId });
  const store = () =>
    new ObjectAgentHomeStore({
      s3: s3ConfigFor(relay.port),
      bucket: s3.bucket,
      dataDir: join(base, `data-${randomBytes(4).toString("hex")}`),
      keyring,
      records,
      format: 2,
      abandonAfterMs: 0,
    });
  const source = join(base, `src-${homeKey}`);
  mkdirSync(join(source, "notes"), { recursive: true });
  writeFileSync(join(source, "notes", "a.txt"), "remember this");
  await store().checkpoint({ homeKey, source: { dir: source } });
  const keys = await s3.keys(`homes/${storageId}/`);
  const manifestKey = keys.find((k) => /\/1\/[0-9a-f]{24}$/.test(k)) as string;
  const chunkKey = keys.find((k) => k.includes("/chunks/")) as string;
  return { store, storageId, manifestKey, chunkKey };
}

/** Puts `size` bytes at `key` from a sparse file starting with `head`, streamed (the test holds none of it). */
async function putLarge(key: string, size: number, head: Buffer): Promise<void> {
  const path = join(base, `large-${randomBytes(4).toString("hex")}`);
  const fd = openSync(path, "w");
  writeSync(fd, head, 0, head.length, 0);
  ftruncateSync(fd, size);
  closeSync(fd);
  // Without a streamed checksum: s3rver would store the SDK's aws-chunked framing as the object's bytes.
  const client = new S3Client({ ...s3ConfigFor(s3.port), requestChecksumCalculation: "WHEN_REQUIRED" });
  try {
    await client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: createReadStream(path), ContentLength: size }),
    );
  } finally {
    client.destroy();
    await rm(path);
  }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentComputerError);
  return (error as AgentComputerError).code;
}

describe("objects over their size are refused before they are downloaded", () => {
  it("a manifest swapped for a 600 MB object: browse, restore and reconcile read a few MiB at most", async () => {
    const home = await committedHome("big-manifest");
    const size = 600 * 1000 * 1000;
    expect(size).toBeGreaterThan(MAX_MANIFEST_BYTES);
    await putLarge(home.manifestKey, size, Buffer.from("ac-ckpt\u0002", "latin1"));
    expect((await s3.keys(`homes/${home.storageId}/1/`)).length).toBe(2);
    const rssBefore = process.memoryUsage().rss;
    let before = relay.sent();
    expect(await codeOf(home.store().list("big-manifest", ""))).toBe("CHECKPOINT_CORRUPT");
    expect(relay.sent() - before).toBeLessThan(16 * MIB);
    before = relay.sent();
    const target = join(base, "big-manifest-target");
    expect(await codeOf(home.store().restore({ homeKey: "big-manifest", target: { dir: target } }))).toBe(
      "CHECKPOINT_CORRUPT",
    );
    expect(relay.sent() - before).toBeLessThan(16 * MIB);
    before = relay.sent();
    await home
      .store()
      .reconcile({ dryRun: true })
      .catch(() => undefined);
    expect(relay.sent() - before).toBeLessThan(16 * MIB);
    // The figure of the issue: +618 MiB RSS when the object was read whole first.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * MIB);
  }, 120_000);

  it("a chunk swapped for a 64 MiB object: a read of its file moves under 2 MiB", async () => {
    const home = await committedHome("big-chunk");
    await putLarge(home.chunkKey, 64 * MIB, Buffer.from("ac-chnk\u0002", "latin1"));
    const before = relay.sent();
    expect(await codeOf(home.store().read("big-chunk", "notes/a.txt"))).toBe("CHECKPOINT_CORRUPT");
    expect(relay.sent() - before).toBeLessThan(2 * MIB);
  }, 60_000);

  it("a committed pointer swapped for a 64 MiB object: read as no pointer, moving under 2 MiB", async () => {
    const home = await committedHome("big-pointer");
    await putLarge(`homes/${home.storageId}/1/committed`, 64 * MIB, Buffer.from(randomBytes(12).toString("hex")));
    const before = relay.sent();
    const target = join(base, "big-pointer-target");
    const restored = await home.store().restore({ homeKey: "big-pointer", target: { dir: target } });
    expect(restored?.revision).toBe(1);
    expect(readFileSync(join(target, "notes", "a.txt"), "utf8")).toBe("remember this");
    expect(relay.sent() - before).toBeLessThan(2 * MIB);
  }, 60_000);
});
