import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { chunkKeysOf } from "../src/chunked/chunk-keys.js";
import { checkManifest, isManifest, openManifest, sealManifest } from "../src/chunked/sealed-manifest.js";
import { ContentKeyring, MemoryHomeRecords, type ObjectAgentHomeStore } from "../src/index.js";
import { treeOf } from "./home-tree.js";
import { storesOn, useLocalS3 } from "./local-s3.js";

// Format v2 against a real S3 server (s3rver): incremental upload, restore
// from the cache, hostile manifests, tampered and swapped chunks, and the
// reconciler's grace rule racing a checkpoint.

const contentKey = randomBytes(32);
const keyring = new ContentKeyring(contentKey);

const suite = useLocalS3("chunked-homes", "chunked-home-store");
const fresh = suite.fresh;

const storeWith = storesOn(suite, { keyring, abandonAfterMs: 0, chunkGraceMs: 60_000 });

/** A home of 30 small files, one 3 MiB file and nested folders. */
function writeHome(dir: string): void {
  mkdirSync(join(dir, "notes/deep"), { recursive: true });
  for (let i = 0; i < 30; i++)
    writeFileSync(join(dir, "notes", `n${i}.txt`), `note ${i} ${randomBytes(200).toString("hex")}\n`);
  writeFileSync(join(dir, "notes/deep/big.bin"), randomBytes(3 * 1024 * 1024 + 17));
  writeFileSync(join(dir, "empty"), "");
}

async function bytesOf(key: string): Promise<Buffer> {
  const got = await suite.s3.client.send(new GetObjectCommand({ Bucket: suite.s3.bucket, Key: key }));
  return Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}
async function putBytes(key: string, body: Buffer): Promise<void> {
  await suite.s3.client.send(new PutObjectCommand({ Bucket: suite.s3.bucket, Key: key, Body: body }));
}

async function deleteKeys(keys: readonly string[]): Promise<void> {
  for (const key of keys) await suite.s3.client.send(new DeleteObjectCommand({ Bucket: suite.s3.bucket, Key: key }));
}

async function rejection(promise: Promise<unknown>): Promise<AgentComputerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentComputerError);
  return error as AgentComputerError;
}

/** A home with one committed v2 revision, and a second store (its own cache) to restore on. */
async function homeWithCheckpoint(homeKey: string) {
  const records = new MemoryHomeRecords();
  records.create({ homeKey, storageId: `st-${homeKey}` });
  const writer = storeWith(records);
  const source = fresh("src");
  writeHome(source);
  await writer.checkpoint({ homeKey, source: { dir: source } });
  const record = await records.read(homeKey);
  const dataKey = await keyring.unwrap(record?.wrappedDataKey as string, `st-${homeKey}`);
  return { records, writer, source, keys: chunkKeysOf(dataKey, `st-${homeKey}`), storageId: `st-${homeKey}` };
}

async function manifestKeyOf(storageId: string, revision: number): Promise<string> {
  const keys = await suite.s3.keys(`homes/${storageId}/${revision}/`);
  return keys.find((k) => !k.endsWith("/committed")) as string;
}

describe("ObjectAgentHomeStore format 2 (the default)", () => {
  it("uploads only changed chunks, restores whole, and a second host's cache fetches only what changed", async () => {
    const { records, writer, source, storageId } = await homeWithCheckpoint("inc");
    const chunksAfterFirst = await suite.s3.keys(`homes/${storageId}/chunks/`);
    // The 3 MiB file's three full 1 MiB chunks alone, and one pack of the 30 notes and that file's 17-byte tail
    // (chunk-uploader.ts); the empty file has none.
    expect(chunksAfterFirst).toHaveLength(4);

    const reader = storeWith(records);
    const first = fresh("restored");
    await reader.restore({ homeKey: "inc", target: { dir: first } });
    expect(treeOf(first)).toEqual(treeOf(source));

    writeFileSync(join(source, "notes/n3.txt"), "changed\n");
    writeFileSync(join(source, "added.txt"), "new file\n");
    const uploaded: number[] = [];
    const second = await storeWith(records, {
      dataDir: writer.dataDir,
      onStage: (e) => void (e.stage === "uploaded" && uploaded.push(e.bytes)),
    }).checkpoint({ homeKey: "inc", source: { dir: source } });
    expect(second.revision).toBe(2);
    const added = (await suite.s3.keys(`homes/${storageId}/chunks/`)).filter((k) => !chunksAfterFirst.includes(k));
    // The two new small chunks, in one new pack.
    expect(added).toHaveLength(1);
    // Two tiny chunks plus the manifest: far under one small file's worth of the 3 MiB home.
    expect(uploaded[0]).toBeLessThan(16 * 1024);

    // The reader's cache holds revision 1: it downloads the manifest and the two new chunks only.
    const fetched: string[] = [];
    const counting = storeWith(records, { dataDir: reader.dataDir });
    const spy = (counting as unknown as { s3: { send: (c: unknown) => unknown } }).s3;
    const send = spy.send.bind(spy);
    spy.send = (command: unknown) => {
      const input = (command as { input?: { Key?: string } }).input;
      if (command instanceof GetObjectCommand && input?.Key?.includes("/chunks/")) fetched.push(input.Key);
      return send(command);
    };
    const target = fresh("restored");
    const restored = await counting.restore({ homeKey: "inc", target: { dir: target } });
    expect(restored?.digest).toBe(second.digest);
    expect(treeOf(target)).toEqual(treeOf(source));
    expect(fetched.sort()).toEqual(added.sort());
  });

  it("migrates a format-1 home: restores its format-1 revision, checkpoints chunked, and restores that", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "migrate", storageId: "st-migrate" });
    const source = fresh("src");
    writeHome(source);
    // What an older release wrote: one sealed archive (the format-1 writer is kept for exactly this).
    const old = await storeWith(records, { format: 1 }).checkpoint({ homeKey: "migrate", source: { dir: source } });
    const archiveKey = await manifestKeyOf("st-migrate", 1);
    expect((await bytesOf(archiveKey)).subarray(0, 8).toString("latin1")).toBe("ac-ckpt\u0001");
    expect(await suite.s3.keys("homes/st-migrate/chunks/")).toEqual([]);

    // A store with the default format, on a fresh host: the format-1 revision restores.
    const host = storeWith(records);
    const restored = fresh("restored");
    expect(await host.restore({ homeKey: "migrate", target: { dir: restored } })).toMatchObject({
      revision: 1,
      digest: old.digest,
    });
    expect(treeOf(restored)).toEqual(treeOf(source));

    // Its next checkpoint is chunked: a sealed manifest in the archive's place, chunks beside it, revision 1 gone.
    writeFileSync(join(source, "notes/n1.txt"), "migrated\n");
    const next = await host.checkpoint({ homeKey: "migrate", source: { dir: source } });
    expect(next.revision).toBe(2);
    const manifestKey = await manifestKeyOf("st-migrate", 2);
    expect(isManifest(await bytesOf(manifestKey))).toBe(true);
    expect((await suite.s3.keys("homes/st-migrate/chunks/")).length).toBeGreaterThan(0);
    expect(await suite.s3.keys("homes/st-migrate/1/")).toEqual([]);

    // Another fresh host restores the chunked revision, byte for byte.
    const again = fresh("restored");
    expect(await storeWith(records).restore({ homeKey: "migrate", target: { dir: again } })).toMatchObject({
      revision: 2,
      digest: next.digest,
    });
    expect(treeOf(again)).toEqual(treeOf(source));
  });

  it("reads format 1 checkpoints after the store switches to format 2", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "mixed", storageId: "st-mixed" });
    const source = fresh("src");
    writeHome(source);
    await storeWith(records, { format: 1 }).checkpoint({ homeKey: "mixed", source: { dir: source } });
    const target = fresh("restored");
    await storeWith(records).restore({ homeKey: "mixed", target: { dir: target } });
    expect(treeOf(target)).toEqual(treeOf(source));
    writeFileSync(join(source, "notes/n1.txt"), "v2 now\n");
    await storeWith(records).checkpoint({ homeKey: "mixed", source: { dir: source } });
    const again = fresh("restored");
    await storeWith(records, { format: 1 }).restore({ homeKey: "mixed", target: { dir: again } });
    expect(treeOf(again)).toEqual(treeOf(source));
  });

  it("checkpoints and restores with every request in flight and no listener warning on its signal", async () => {
    // A restore holds up to 2 x chunkConcurrency chunks and chunkConcurrency packs ahead, each
    // request listening on the operation's signal: past Node's default of ten listeners that
    // printed a MaxListenersExceededWarning on every restore (operation-signal.ts).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const records = new MemoryHomeRecords();
      records.create({ homeKey: "wide", storageId: "st-wide" });
      const source = fresh("src");
      mkdirSync(source);
      // 24 whole 1 MiB chunks: more than 2 x 8 objects of their own to fetch.
      for (let i = 0; i < 3; i++) writeFileSync(join(source, `part-${i}.bin`), randomBytes(8 * 1024 * 1024));
      await storeWith(records).checkpoint({ homeKey: "wide", source: { dir: source } });
      const target = fresh("restored");
      await storeWith(records).restore({ homeKey: "wide", target: { dir: target } });
      expect(treeOf(target)).toEqual(treeOf(source));
      // A warning is emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  describe("refuses hostile manifests (sealed with the right key) with the target untouched", () => {
    const file = (path: string, extra: Record<string, unknown> = {}) => ({
      path,
      kind: "file",
      mode: 0o644,
      mtime: 1,
      size: 0,
      chunks: [],
      ...extra,
    });
    const dir = (path: string) => ({ path, kind: "directory", mode: 0o755, mtime: 1 });
    const name = "a".repeat(64);
    const cases: [string, (storageId: string) => unknown][] = [
      ["a '..' segment", () => [dir("a"), file("a/../../etc/passwd")]],
      ["an absolute path", () => [file("/etc/passwd")]],
      ["a NUL byte", () => [file("a\0b")]],
      ["an empty path", () => [file("")]],
      ["an empty segment", () => [dir("a"), file("a//b")]],
      ["a '.' segment", () => [dir("a"), file("a/./b")]],
      ["a trailing slash", () => [dir("a"), file("a/")]],
      ["a symbolic link", () => [{ path: "l", kind: "symlink", mode: 0o777, mtime: 1, target: "/etc" }]],
      ["a device", () => [{ path: "d", kind: "device", mode: 0o600, mtime: 1 }]],
      ["a duplicate path", () => [file("x"), file("x")]],
      ["a file and a folder of one name", () => [file("x"), dir("x")]],
      ["a child before its folder", () => [file("a/b"), dir("a")]],
      ["a file below a file", () => [file("a"), file("a/b")]],
      ["an oversized file", () => [file("big", { size: 2 ** 40, chunks: [] })]],
      ["chunks that do not add up", () => [file("f", { size: 10, chunks: [{ name, size: 5 }] })]],
      ["a malformed chunk name", () => [file("f", { size: 5, chunks: [{ name: "../../x", size: 5 }] })]],
      ["an oversized chunk", () => [file("f", { size: 2 * 1024 * 1024, chunks: [{ name, size: 2 * 1024 * 1024 }] })]],
      ["a negative size", () => [file("f", { size: -1 })]],
      ["a setuid-beyond mode", () => [file("f", { mode: 0o170000 })]],
      ["an unknown field", () => [file("f", { owner: "root" })]],
      ["a name over 255 bytes", () => [file("n".repeat(256))]],
      ["a path deeper than the limit", () => [file(Array.from({ length: 300 }, () => "d").join("/"))]],
    ];
    for (const [what, entries] of cases) {
      it(`refuses ${what}`, async () => {
        const homeKey = `hostile-${cases.findIndex((c) => c[0] === what)}`;
        const { records, keys, storageId } = await homeWithCheckpoint(homeKey);
        const record = await records.read(homeKey);
        const key = await manifestKeyOf(storageId, record?.revision as number);
        const manifest = { format: 2, storageId, revision: record?.revision, entries: entries(storageId) };
        await putBytes(key, sealManifest(keys, manifest as never).sealed);
        const target = fresh("target");
        mkdirSync(target);
        writeFileSync(join(target, "kept.txt"), "untouched");
        const error = await rejection(storeWith(records).restore({ homeKey, target: { dir: target } }));
        expect(error.code).toBe("CHECKPOINT_CORRUPT");
        expect(readdirSync(target)).toEqual(["kept.txt"]);
        expect(readFileSync(join(target, "kept.txt"), "utf8")).toBe("untouched");
      });
    }

    it("refuses a packed chunk that names no pack or lies past its pack's end", () => {
      const n = "b".repeat(64);
      const withChunk = (chunk: object, packs?: object[]) => ({
        format: 2,
        storageId: "s",
        revision: 3,
        entries: [
          { path: "f", kind: "file", mode: 0o644, mtime: 1, size: 10, chunks: [{ name: n, size: 10, ...chunk }] },
        ],
        ...(packs ? { packs } : {}),
      });
      // Ten bytes sealed: magic, nonce and tag add 36.
      const pack = { name: n, bytes: 10 + 36 };
      expect(() => checkManifest(withChunk({ pack: 0, at: 0 }, [pack]), "s", 3)).not.toThrow();
      expect(() => checkManifest(withChunk({ pack: 1, at: 0 }, [pack]), "s", 3)).toThrow(/names no pack/);
      expect(() => checkManifest(withChunk({ pack: 0, at: 1 }, [pack]), "s", 3)).toThrow(/outside/);
      expect(() => checkManifest(withChunk({ pack: 0 }, [pack]), "s", 3)).toThrow(/names no pack/);
      expect(() => checkManifest(withChunk({ at: 0 }), "s", 3)).toThrow(/names no pack/);
    });

    it("refuses the wrong storage id, revision and format in the plaintext too", () => {
      const good = { format: 2, storageId: "s", revision: 3, entries: [] };
      expect(() => checkManifest({ ...good, storageId: "t" }, "s", 3)).toThrow(/storage id/);
      expect(() => checkManifest({ ...good, revision: 2 }, "s", 3)).toThrow(/revision 2/);
      expect(() => checkManifest({ ...good, format: 1 }, "s", 3)).toThrow(/malformed/);
      expect(() => checkManifest(good, "s", 3, { maxEntries: 1 })).not.toThrow();
      expect(() =>
        checkManifest(
          {
            ...good,
            entries: [
              { path: "a", kind: "directory", mode: 0o755, mtime: 1 },
              { path: "b", kind: "directory", mode: 0o755, mtime: 1 },
            ],
          },
          "s",
          3,
          { maxEntries: 1 },
        ),
      ).toThrow(/entries/);
    });
  });

  describe("refuses tampered and swapped objects with CHECKPOINT_CORRUPT and the target untouched", () => {
    type Attack = (
      ctx: Awaited<ReturnType<typeof homeWithCheckpoint>> & { manifestKey: string; chunkKeys: string[] },
    ) => Promise<void>;
    const flip = async (key: string, at: (length: number) => number) => {
      const bytes = await bytesOf(key);
      const i = at(bytes.length);
      bytes[i] = (bytes[i] as number) ^ 1;
      await putBytes(key, bytes);
    };
    const attacks: [string, Attack][] = [
      ["a flipped ciphertext byte in a chunk", async (c) => flip(c.chunkKeys[0] as string, (n) => n >> 1)],
      ["a flipped tag byte in a chunk", async (c) => flip(c.chunkKeys[0] as string, (n) => n - 1)],
      ["a flipped nonce byte in a chunk", async (c) => flip(c.chunkKeys[0] as string, () => 9)],
      [
        "a truncated chunk",
        async (c) => putBytes(c.chunkKeys[0] as string, (await bytesOf(c.chunkKeys[0] as string)).subarray(0, 40)),
      ],
      [
        "a chunk with bytes appended",
        async (c) =>
          putBytes(
            c.chunkKeys[0] as string,
            Buffer.concat([await bytesOf(c.chunkKeys[0] as string), Buffer.from("x")]),
          ),
      ],
      ["an empty chunk object", async (c) => putBytes(c.chunkKeys[0] as string, Buffer.alloc(0))],
      [
        "a missing chunk",
        async (c) => {
          await suite.s3.client.send(new DeleteObjectCommand({ Bucket: suite.s3.bucket, Key: c.chunkKeys[0] }));
        },
      ],
      [
        "one chunk swapped for another of the same home",
        async (c) => putBytes(c.chunkKeys[0] as string, await bytesOf(c.chunkKeys[1] as string)),
      ],
      [
        "another home's chunk under this name",
        async (c) => {
          const other = await homeWithCheckpoint(`other-${randomBytes(3).toString("hex")}`);
          const theirs = (await suite.s3.keys(`homes/${other.storageId}/chunks/`))[0] as string;
          await putBytes(c.chunkKeys[0] as string, await bytesOf(theirs));
        },
      ],
      [
        "another home's manifest",
        async (c) => {
          const other = await homeWithCheckpoint(`other-${randomBytes(3).toString("hex")}`);
          await putBytes(c.manifestKey, await bytesOf(await manifestKeyOf(other.storageId, 1)));
        },
      ],
      [
        "an older revision's manifest",
        async (c) => {
          const older = await bytesOf(c.manifestKey);
          writeFileSync(join(c.source, "notes/n0.txt"), "newer\n");
          await c.writer.checkpoint({ homeKey: c.keys.storageId.slice(3), source: { dir: c.source } });
          await putBytes(await manifestKeyOf(c.storageId, 2), older);
        },
      ],
      [
        "the committed revision's manifest and pointer deleted (issue 45: it restored as no checkpoint)",
        async (c) => deleteKeys(await suite.s3.keys(`homes/${c.storageId}/1/`)),
      ],
      ["the committed revision's manifest deleted, its pointer kept", async (c) => deleteKeys([c.manifestKey])],
      [
        "a rollback: revision 2's objects deleted and revision 1's manifest and pointer put back",
        async (c) => {
          const older = await bytesOf(c.manifestKey);
          const olderPointer = await bytesOf(`homes/${c.storageId}/1/committed`);
          writeFileSync(join(c.source, "notes/n0.txt"), "newer\n");
          await c.writer.checkpoint({ homeKey: c.keys.storageId.slice(3), source: { dir: c.source } });
          await deleteKeys(await suite.s3.keys(`homes/${c.storageId}/2/`));
          await putBytes(c.manifestKey, older);
          await putBytes(`homes/${c.storageId}/1/committed`, olderPointer);
        },
      ],
      [
        "the winning attempt and its pointer deleted, a losing attempt of the same revision left (issue 45, finding 9: it restored the loser)",
        async (c) => {
          const loser = randomBytes(12).toString("hex");
          const empty = { format: 2, storageId: c.storageId, revision: 1, entries: [] } as const;
          await putBytes(`homes/${c.storageId}/1/${loser}`, sealManifest(c.keys, empty).sealed);
          await deleteKeys([c.manifestKey, `homes/${c.storageId}/1/committed`]);
        },
      ],
      ["a flipped manifest byte", async (c) => flip(c.manifestKey, (n) => n >> 1)],
      ["a truncated manifest", async (c) => putBytes(c.manifestKey, (await bytesOf(c.manifestKey)).subarray(0, 30))],
      [
        "a manifest resealed under a wrong key",
        async (c) => {
          const wrong = chunkKeysOf(randomBytes(32), c.storageId);
          await putBytes(
            c.manifestKey,
            sealManifest(wrong, { format: 2, storageId: c.storageId, revision: 1, entries: [] }).sealed,
          );
        },
      ],
    ];
    for (const [what, attack] of attacks) {
      it(`refuses ${what}`, async () => {
        const homeKey = `tamper-${attacks.findIndex((a) => a[0] === what)}`;
        const ctx = await homeWithCheckpoint(homeKey);
        const chunkKeys = await suite.s3.keys(`homes/${ctx.storageId}/chunks/`);
        const manifestKey = await manifestKeyOf(ctx.storageId, 1);
        await attack({ ...ctx, manifestKey, chunkKeys });
        const target = fresh("target");
        mkdirSync(target);
        writeFileSync(join(target, "kept.txt"), "untouched");
        const error = await rejection(storeWith(ctx.records).restore({ homeKey, target: { dir: target } }));
        expect(error.code).toBe("CHECKPOINT_CORRUPT");
        expect(readdirSync(target)).toEqual(["kept.txt"]);
      });
    }

    // The computer record names the commit's winner (issue 45, finding 9): a pointer that names another
    // attempt is not believed, and the winner restores as it was.
    const redirections: [string, Attack][] = [
      [
        "the committed pointer flipped to a losing attempt of the same revision",
        async (c) => {
          const loser = randomBytes(12).toString("hex");
          const empty = { format: 2, storageId: c.storageId, revision: 1, entries: [] } as const;
          await putBytes(`homes/${c.storageId}/1/${loser}`, sealManifest(c.keys, empty).sealed);
          await putBytes(`homes/${c.storageId}/1/committed`, Buffer.from(loser));
        },
      ],
      [
        "revision 1's pointer replayed at revision 2, edited to name a losing attempt",
        async (c) => {
          const pointer = (await bytesOf(`homes/${c.storageId}/1/committed`)).toString();
          writeFileSync(join(c.source, "notes/n0.txt"), "newer\n");
          await c.writer.checkpoint({ homeKey: c.keys.storageId.slice(3), source: { dir: c.source } });
          const loser = randomBytes(12).toString("hex");
          const empty = { format: 2, storageId: c.storageId, revision: 2, entries: [] } as const;
          await putBytes(`homes/${c.storageId}/2/${loser}`, sealManifest(c.keys, empty).sealed);
          await putBytes(`homes/${c.storageId}/2/committed`, Buffer.from(pointer.replace(/^[0-9a-f]{24}/, loser)));
        },
      ],
    ];
    for (const [what, redirect] of redirections) {
      it(`restores the attempt the record names despite ${what}`, async () => {
        const homeKey = `redirect-${redirections.findIndex((a) => a[0] === what)}`;
        const ctx = await homeWithCheckpoint(homeKey);
        const chunkKeys = await suite.s3.keys(`homes/${ctx.storageId}/chunks/`);
        const manifestKey = await manifestKeyOf(ctx.storageId, 1);
        await redirect({ ...ctx, manifestKey, chunkKeys });
        const target = fresh("target");
        await storeWith(ctx.records).restore({ homeKey, target: { dir: target } });
        expect(readFileSync(join(target, "notes/n0.txt"), "utf8")).toBe(
          readFileSync(join(ctx.source, "notes/n0.txt"), "utf8"),
        );
      });
    }

    it("opens the untampered manifest it refuses after a flip (the attack is the only difference)", async () => {
      const { keys, storageId } = await homeWithCheckpoint("control");
      const key = await manifestKeyOf(storageId, 1);
      expect(openManifest(keys, 1, await bytesOf(key)).manifest.entries.length).toBeGreaterThan(30);
      expect(() => openManifest(keys, 2, Buffer.from(key))).toThrow(AgentComputerError);
    });
  });

  describe("the reconciler's chunk collection", () => {
    it("deletes unreferenced chunks only a grace period after marking them, and never referenced ones", async () => {
      const records = new MemoryHomeRecords();
      records.create({ homeKey: "gc", storageId: "st-gc" });
      const store = storeWith(records, { chunkGraceMs: 3000, prefix: "gc/" });
      const source = fresh("src");
      writeHome(source);
      await store.checkpoint({ homeKey: "gc", source: { dir: source } });
      // Server times are whole seconds: the mark must fall in a later second than the chunk to ever delete it.
      await new Promise((r) => setTimeout(r, 1100));
      // The big file's first MiB changes: its old first chunk, an object of its own, is referenced by nothing now.
      // (A changed note leaves its old chunk in a pack the other notes still need: packs go only when unreferenced.)
      const big = join(source, "notes/deep/big.bin");
      writeFileSync(big, Buffer.concat([randomBytes(1024 * 1024), readFileSync(big).subarray(1024 * 1024)]));
      await store.checkpoint({ homeKey: "gc", source: { dir: source } });
      const before = await suite.s3.keys("gc/homes/st-gc/chunks/");
      const first = await store.reconcile();
      expect(first.removed.filter((r) => r.reason === "unreferenced")).toHaveLength(0);
      expect(await suite.s3.keys("gc/homes/st-gc/gc-marks/")).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 3100));
      const second = await store.reconcile();
      const gone = second.removed.filter((r) => r.reason === "unreferenced").map((r) => r.key);
      expect(gone).toHaveLength(1);
      expect((await suite.s3.keys("gc/homes/st-gc/chunks/")).length).toBe(before.length - 1);
      const target = fresh("restored");
      await storeWith(records, { prefix: "gc/" }).restore({ homeKey: "gc", target: { dir: target } });
      expect(treeOf(target)).toEqual(treeOf(source));
    });

    it("keeps a chunk a checkpoint in flight reuses although the committed manifest no longer names it", async () => {
      const records = new MemoryHomeRecords();
      records.create({ homeKey: "race", storageId: "st-race" });
      // The pending manifest is kept while younger than abandonAfterMs (v1's rule for pending archives).
      const store = storeWith(records, { chunkGraceMs: 8000, prefix: "race/", abandonAfterMs: 60_000 });
      const source = fresh("src");
      writeHome(source);
      // The big file's first MiB is a chunk of its own (a note's would share a pack with the other notes).
      const big = join(source, "notes/deep/big.bin");
      const original = readFileSync(big);
      await store.checkpoint({ homeKey: "race", source: { dir: source } });
      // Server times are whole seconds: the mark must fall in a later second than the chunk to ever delete it.
      await new Promise((r) => setTimeout(r, 1100));
      // Revision 2 changes the big file's first MiB: its old chunk is unreferenced, and gets marked.
      writeFileSync(big, Buffer.concat([randomBytes(1024 * 1024), original.subarray(1024 * 1024)]));
      await store.checkpoint({ homeKey: "race", source: { dir: source } });
      await store.reconcile();
      await new Promise((r) => setTimeout(r, 8100));
      // Revision 3 brings the old first MiB back. The checkpoint sees the mark and uploads the chunk again, and
      // the reconciler runs while it is between its chunk upload and its commit.
      writeFileSync(big, original);
      // Between listing the chunks and writing its manifest ("uploading"), and between the manifest and the commit.
      const reconciled: Awaited<ReturnType<ObjectAgentHomeStore["reconcile"]>>[] = [];
      const racing = storeWith(records, {
        dataDir: store.dataDir,
        chunkGraceMs: 8000,
        prefix: "race/",
        abandonAfterMs: 60_000,
        onStage: async (e) => {
          if (e.stage === "uploading" || e.stage === "committing") reconciled.push(await store.reconcile());
        },
      });
      await racing.checkpoint({ homeKey: "race", source: { dir: source } });
      expect(reconciled).toHaveLength(2);
      // The first racing run deleted the marked chunk (no manifest named it yet); the checkpoint had counted it absent and sent it again.
      expect(reconciled[0]?.removed.filter((r) => r.reason === "unreferenced")).toHaveLength(1);
      expect(reconciled[1]?.removed.filter((r) => r.reason === "unreferenced")).toEqual([]);
      await new Promise((r) => setTimeout(r, 8100));
      await store.reconcile();
      const target = fresh("restored");
      await storeWith(records, { prefix: "race/" }).restore({ homeKey: "race", target: { dir: target } });
      expect(Object.keys(treeOf(target)).length).toBe(Object.keys(treeOf(source)).length);
      expect(readFileSync(join(target, "notes/deep/big.bin")).equals(original)).toBe(true);
      expect(treeOf(target)).toEqual(treeOf(source));
    });

    it("removes every chunk of a deleted home, and the next checkpoint uploads them all again", async () => {
      const { records, writer, storageId, source } = await homeWithCheckpoint("gone");
      const before = (await suite.s3.keys(`homes/${storageId}/chunks/`)).length;
      await writer.delete("gone");
      // Every chunk and manifest goes; what stays is the pointer that says, under the home's key, that the copy was
      // deleted on purpose (else a restore at the kept revision is CHECKPOINT_CORRUPT: issue 45, finding 5).
      expect(await suite.s3.keys(`homes/${storageId}/`)).toEqual([`homes/${storageId}/1/committed`]);
      expect(await storeWith(records).restore({ homeKey: "gone", target: { dir: fresh("none") } })).toBeUndefined();
      expect(existsSync(writer.homeDir("gone"))).toBe(false);
      await writer.checkpoint({ homeKey: "gone", source: { dir: source } });
      expect((await suite.s3.keys(`homes/${storageId}/chunks/`)).length).toBe(before);
      const target = fresh("restored");
      await storeWith(records).restore({ homeKey: "gone", target: { dir: target } });
      expect(treeOf(target)).toEqual(treeOf(source));
    });
  });
});
