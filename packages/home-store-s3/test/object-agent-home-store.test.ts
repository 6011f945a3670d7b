import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { AgentComputerError } from "@agent-computer/core";
import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import {
  ComputerHomeRecords,
  ContentKeyring,
  type HomeStoreStage,
  MemoryHomeRecords,
  ObjectAgentHomeStore,
  type ObjectAgentHomeStoreOptions,
} from "../src/index.js";
import { generationOf, writeGeneration } from "./generation.js";
import { useLocalS3 } from "./local-s3.js";

const contentKey = randomBytes(32);

const suite = useLocalS3("agent-homes", "object-home-store");
const fresh = suite.fresh;

function storeWith(options: Partial<ObjectAgentHomeStoreOptions> & Pick<ObjectAgentHomeStoreOptions, "records">) {
  return new ObjectAgentHomeStore({
    s3: suite.s3.config,
    bucket: suite.s3.bucket,
    prefix: "space-1/",
    dataDir: fresh("data"),
    keyring: new ContentKeyring(contentKey),
    partBytes: 64 * 1024,
    abandonAfterMs: 0,
    // These cases count the objects and upload parts of format 1 (one sealed archive per revision), which older
    // releases wrote and every store still reads; the default format's are chunked-home-store.test.ts's.
    format: 1,
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

describe("ObjectAgentHomeStore", () => {
  it("round-trips a home through the bucket, object by object and stage by stage", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "team-1", storageId: "st-team-1" });
    const stages: HomeStoreStage[] = [];
    const store = storeWith({ records, onStage: (e) => void stages.push(e) });
    const source = fresh("src");

    writeGeneration(source, 1);
    const first = await store.checkpoint({ homeKey: "team-1", source: { dir: source } });
    expect(first).toMatchObject({ homeKey: "team-1", revision: 1, files: 4, mounted: false });
    expect(first.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    writeGeneration(source, 2);
    stages.length = 0;
    const second = await store.checkpoint({ homeKey: "team-1", source: { dir: source } });
    expect(second.revision).toBe(2);

    // The real stages, in order, with several parts for a home of ~290 KiB at 64 KiB parts.
    const names = stages.map((e) => e.stage);
    expect(names[0]).toBe("packing");
    expect(names.slice(-3)).toEqual(["uploaded", "committing", "cleaning-up"]);
    const parts = stages.flatMap((e) => (e.stage === "uploading" ? [e.part] : []));
    expect(parts.length).toBeGreaterThan(3);
    expect(parts).toEqual(parts.map((_, i) => i + 1));

    // Only revision 2 is left: its object and the pointer naming it.
    // The bucket lists keys in byte order, and a random attempt id may sort before or after "committed".
    const keys = await suite.s3.keys("space-1/homes/st-team-1/");
    expect(keys).toHaveLength(2);
    const pointer = "space-1/homes/st-team-1/2/committed";
    expect(keys).toContain(pointer);
    const objectKey = keys.find((key) => key !== pointer) as string;
    expect(objectKey).toMatch(/^space-1\/homes\/st-team-1\/2\/[0-9a-f]{24}$/);
    expect((await records.read("team-1"))?.wrappedDataKey).toMatch(/^ac-wk1\./);

    // Another host (empty cache) downloads; a second restore there is served from its cache.
    const downloads: HomeStoreStage[] = [];
    const other = storeWith({ records, onStage: (e) => void (e.stage === "downloading" && downloads.push(e)) });
    const target = fresh("restored");
    const restored = await other.restore({ homeKey: "team-1", target: { dir: target } });
    expect(restored).toMatchObject({ revision: 2, files: 4, digest: second.digest });
    expect(generationOf(target)).toBe(2);
    await other.restore({ homeKey: "team-1", target: { dir: fresh("again") } });
    expect(downloads).toHaveLength(1);
    // The bytes in the bucket are sealed: no file content in the clear.
    const object = await suite.s3.client.send(
      new (await import("@aws-sdk/client-s3")).GetObjectCommand({ Bucket: suite.s3.bucket, Key: objectKey }),
    );
    const sealed = Buffer.from(
      await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    );
    expect(sealed.includes(Buffer.from("generation 2"))).toBe(false);
  });

  it("resolves undefined for a home with no checkpoint and after delete, and keeps counting revisions", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "h", storageId: "st-h" });
    const store = storeWith({ records });
    const target = fresh("untouched");
    expect(await store.restore({ homeKey: "h", target: { dir: target } })).toBeUndefined();
    expect(existsSync(target)).toBe(false);
    const source = fresh("src");
    writeGeneration(source, 5);
    await store.checkpoint({ homeKey: "h", source: { dir: source } });
    await store.delete("h");
    // Only the signed pointer saying the copy was deleted on purpose stays (issue 45, finding 5).
    expect(await suite.s3.keys("space-1/homes/st-h/")).toEqual(["space-1/homes/st-h/1/committed"]);
    expect(await store.latest("h")).toBeUndefined();
    expect((await store.checkpoint({ homeKey: "h", source: { dir: source } })).revision).toBe(2);
  });

  it("checkpoints a mounted home from its cache folder and leaves the folder live", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "mounted", storageId: "st-mounted" });
    const store = storeWith({ records });
    writeGeneration(store.homeDir("mounted"), 3);
    const saved = await store.checkpoint({ homeKey: "mounted", source: { mounted: true } });
    expect(saved).toMatchObject({ revision: 1, mounted: true, files: 4 });
    expect(await store.restore({ homeKey: "mounted", target: { mounted: true } })).toMatchObject({ revision: 1 });
    expect(generationOf(store.homeDir("mounted"))).toBe(3);
    const elsewhere = storeWith({ records });
    await elsewhere.restore({ homeKey: "mounted", target: { mounted: true } });
    expect(generationOf(elsewhere.homeDir("mounted"))).toBe(3);
  });

  it("lets exactly one of two racing writers commit; the loser gets CONFLICT and loses nothing", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "race", storageId: "st-race" });
    const seed = fresh("seed");
    writeGeneration(seed, 1);
    await storeWith({ records }).checkpoint({ homeKey: "race", source: { dir: seed } });

    // Both writers read revision 1 and upload before either commits.
    let arrived = 0;
    let release!: () => void;
    const bothUploaded = new Promise<void>((r) => {
      release = r;
    });
    const barrier = async (e: HomeStoreStage) => {
      if (e.stage !== "committing") return;
      if (++arrived === 2) release();
      await bothUploaded;
    };
    const [a, b] = [storeWith({ records, onStage: barrier }), storeWith({ records, onStage: barrier })];
    const [srcA, srcB] = [fresh("a"), fresh("b")];
    writeGeneration(srcA, 10);
    writeGeneration(srcB, 20);
    const results = await Promise.allSettled([
      a.checkpoint({ homeKey: "race", source: { dir: srcA } }),
      b.checkpoint({ homeKey: "race", source: { dir: srcB } }),
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(AgentComputerError.is(lost[0]?.reason, "CONFLICT")).toBe(true);
    const winner = results[0]?.status === "fulfilled" ? 10 : 20;
    const target = fresh("race-restored");
    expect(await storeWith({ records }).restore({ homeKey: "race", target: { dir: target } })).toMatchObject({
      revision: 2,
    });
    expect(generationOf(target)).toBe(winner);
    // The loser's object is gone, and its home is still its own to save at the next revision.
    expect((await suite.s3.keys("space-1/homes/st-race/")).filter((k) => !k.endsWith("committed"))).toHaveLength(1);
    const loser = results[0]?.status === "fulfilled" ? b : a;
    const retried = await loser.checkpoint({ homeKey: "race", source: { dir: winner === 10 ? srcB : srcA } });
    expect(retried.revision).toBe(3);
  });

  it("never makes a paused worker's late upload current (fenced commit)", async () => {
    const leases = new LeaseEngine(new MemoryStateStore());
    await leases.createComputer({ computerId: "c1", providerKind: "fake", homeKey: "fenced", storageId: "st-fenced" });
    const records = new ComputerHomeRecords({ leases, computerIdOf: () => "c1", computerIds: () => ["c1"] });
    const paused = storeWith({ records });
    const fresher = storeWith({ records });
    const [srcOld, srcNew] = [fresh("old"), fresh("new")];
    writeGeneration(srcOld, 7);
    writeGeneration(srcNew, 8);

    const staleLease = await leases.acquireCheckpoint({ computerId: "c1", holder: "worker-a", ttlMs: 50 });
    let resumeA!: () => void;
    const aMayCommit = new Promise<void>((r) => {
      resumeA = r;
    });
    const late = paused.checkpoint({
      homeKey: "fenced",
      source: { dir: srcOld },
      commit: async (next) => {
        await aMayCommit; // paused (a GC pause, a frozen VM) past its lease
        await leases.commitRevision({ computerId: "c1", lease: staleLease, expectedRevision: 0, next });
      },
    });
    await new Promise((r) => setTimeout(r, 120));
    const lease = await leases.acquireCheckpoint({ computerId: "c1", holder: "worker-b", ttlMs: 10_000 });
    await fresher.checkpoint({
      homeKey: "fenced",
      source: { dir: srcNew },
      commit: (next) => leases.commitRevision({ computerId: "c1", lease, expectedRevision: 0, next }).then(() => {}),
    });
    resumeA();
    const error = await rejection(late);
    expect(["FENCED_OUT", "CONFLICT"]).toContain(error.code);
    expect((await leases.getComputer("c1"))?.revision).toBe(1);
    const target = fresh("fenced-restored");
    await storeWith({ records }).restore({ homeKey: "fenced", target: { dir: target } });
    expect(generationOf(target)).toBe(8);
    expect((await suite.s3.keys("space-1/homes/st-fenced/")).filter((k) => !k.endsWith("committed"))).toHaveLength(1);
  });

  it("refuses a wrapped key of another space, of another home, or of a deleted computer, with typed errors", async () => {
    const leases = new LeaseEngine(new MemoryStateStore());
    const live = new Set(["k1", "k2"]);
    const records = new ComputerHomeRecords({ leases, computerIds: () => live });
    await leases.createComputer({ computerId: "k1", providerKind: "fake", homeKey: "k1", storageId: "st-k1" });
    await leases.createComputer({ computerId: "k2", providerKind: "fake", homeKey: "k2", storageId: "st-k2" });
    const store = storeWith({ records });
    const source = fresh("src");
    writeGeneration(source, 4);
    await store.checkpoint({ homeKey: "k1", source: { dir: source } });
    await store.checkpoint({ homeKey: "k2", source: { dir: source } });

    // Another space's keyring on a host with an empty cache.
    const target = fresh("target");
    writeGeneration(target, 99);
    const otherSpace = storeWith({ records, keyring: new ContentKeyring(randomBytes(32)) });
    const wrongSpace = await rejection(otherSpace.restore({ homeKey: "k1", target: { dir: target } }));
    expect(wrongSpace.code).toBe("CHECKPOINT_CORRUPT");
    expect(wrongSpace.message).toContain("another content key");
    expect(generationOf(target)).toBe(99);

    // k2's wrapped key copied onto k1: bound to k2's storage id, it does not unwrap for k1.
    const k1 = (await leases.getComputer("k1"))!;
    const k2 = (await leases.getComputer("k2"))!;
    await leases.updateComputer({
      computerId: "k1",
      expectedVersion: k1.version,
      changes: { wrappedDataKey: k2.wrappedDataKey! },
    });
    const spliced = await rejection(storeWith({ records }).restore({ homeKey: "k1", target: { dir: target } }));
    expect(spliced.code).toBe("CHECKPOINT_CORRUPT");

    // Deleting the computer: the home is unreadable, and a key saved from it does not open a new one.
    const saved = k2.wrappedDataKey!;
    await leases.deleteComputer({ computerId: "k2" });
    live.delete("k2");
    expect((await rejection(storeWith({ records }).restore({ homeKey: "k2", target: { dir: target } }))).code).toBe(
      "NOT_FOUND",
    );
    await leases.createComputer({
      computerId: "k2",
      providerKind: "fake",
      homeKey: "k2",
      storageId: "st-k2-new",
      wrappedDataKey: saved,
    });
    expect((await rejection(store.checkpoint({ homeKey: "k2", source: { dir: source } }))).code).toBe(
      "CHECKPOINT_CORRUPT",
    );
    expect(generationOf(target)).toBe(99);
    // The deleted computer's objects belong to nobody now.
    const report = await store.reconcile();
    expect(report.removed.filter((r) => r.key.includes("/st-k2/")).map((r) => r.reason)).toEqual([
      "unowned",
      "unowned",
    ]);
    expect(await suite.s3.keys("space-1/homes/st-k2/")).toEqual([]);
    expect(await suite.s3.keys("space-1/homes/st-k1/")).toHaveLength(2);
  });

  it("reconciles leftovers (dry run first), never the committed revision, never keys it did not write", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "rec", storageId: "st-rec" });
    const store = storeWith({ records, prefix: "space-2/" });
    const source = fresh("src");
    writeGeneration(source, 1);
    await store.checkpoint({ homeKey: "rec", source: { dir: source } });
    const current = await suite.s3.keys("space-2/homes/st-rec/");
    const put = (Key: string) =>
      suite.s3.client.send(new PutObjectCommand({ Bucket: suite.s3.bucket, Key, Body: "x" }));
    // A crash before commit (revision 2), one between commit and clean-up (revision 0 is never a key; use a
    // loser of revision 1), a deleted computer's object, and a foreign key.
    await put(`space-2/homes/st-rec/2/${"a".repeat(24)}`);
    await put(`space-2/homes/st-rec/1/${"b".repeat(24)}`);
    await put(`space-2/homes/st-gone/4/${"c".repeat(24)}`);
    await put("space-2/homes/README.txt");

    const dry = await store.reconcile({ dryRun: true });
    expect(dry.removed.map((r) => r.reason).sort()).toEqual(["abandoned", "superseded", "unowned"]);
    expect(await suite.s3.keys("space-2/homes/")).toHaveLength(current.length + 4);
    const real = await store.reconcile();
    expect([...real.kept].sort()).toEqual(current);
    expect(await suite.s3.keys("space-2/homes/")).toEqual([...current, "space-2/homes/README.txt"].sort());
    const target = fresh("rec-restored");
    await storeWith({ records, prefix: "space-2/" }).restore({ homeKey: "rec", target: { dir: target } });
    expect(generationOf(target)).toBe(1);
  });

  it("keeps the committed revision when its pointer names no attempt (empty, as a torn write leaves it)", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "torn", storageId: "st-torn" });
    const store = storeWith({ records, prefix: "space-4/" });
    const source = fresh("torn-src");
    writeGeneration(source, 1);
    await store.checkpoint({ homeKey: "torn", source: { dir: source } });
    const pointer = "space-4/homes/st-torn/1/committed";
    expect(await suite.s3.keys("space-4/")).toContain(pointer);
    for (const body of ["", "0".repeat(24), "committed"]) {
      await suite.s3.client.send(new PutObjectCommand({ Bucket: suite.s3.bucket, Key: pointer, Body: body }));
      const report = await store.reconcile();
      expect(report.removed, JSON.stringify(body)).toEqual([]);
      const target = fresh(`torn-restored-${body.length}`);
      await storeWith({ records, prefix: "space-4/" }).restore({ homeKey: "torn", target: { dir: target } });
      expect(generationOf(target)).toBe(1);
    }
  });

  it("keeps an object above the committed revision while it may still be a checkpoint in flight", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "young", storageId: "st-young" });
    const key = `space-3/homes/st-young/1/${"d".repeat(24)}`;
    await suite.s3.client.send(new PutObjectCommand({ Bucket: suite.s3.bucket, Key: key, Body: "x" }));
    const report = await storeWith({ records, prefix: "space-3/", abandonAfterMs: 60_000 }).reconcile();
    expect(report.kept).toEqual([key]);
    expect(await suite.s3.keys("space-3/")).toEqual([key]);
  });

  it("fails UNAVAILABLE, naming no credentials, when the bucket cannot be reached", async () => {
    const records = new MemoryHomeRecords();
    records.create({ homeKey: "down", storageId: "st-down" });
    const store = storeWith({
      records,
      s3: { ...suite.s3.config, endpoint: "http://127.0.0.1:9", maxAttempts: 1 },
    });
    const source = fresh("src");
    writeGeneration(source, 1);
    const error = await rejection(store.checkpoint({ homeKey: "down", source: { dir: source } }));
    expect(error.code).toBe("UNAVAILABLE");
    expect(error.retryable).toBe(true);
    expect(error.message).not.toContain("S3RVER");
    // Nothing advanced and the cache holds nothing half-made.
    expect((await records.read("down"))?.revision).toBe(0);
  });

  it("validates its options and requests with paths into the bad input", () => {
    const records = new MemoryHomeRecords();
    const bad = (options: unknown) => () => new ObjectAgentHomeStore(options as ObjectAgentHomeStoreOptions);
    expect(
      bad({
        s3: suite.s3.config,
        bucket: "B",
        dataDir: fresh("data"),
        keyring: new ContentKeyring(contentKey),
        records,
      }),
    ).toThrow(/at "bucket"/);
    expect(
      bad({
        s3: suite.s3.config,
        bucket: "ok-bucket",
        prefix: "../",
        dataDir: fresh("data"),
        keyring: new ContentKeyring(contentKey),
        records,
      }),
    ).toThrow(/at "prefix"/);
    expect(bad({ s3: suite.s3.config, bucket: "ok-bucket", dataDir: fresh("data"), keyring: {}, records })).toThrow(
      /at "keyring"/,
    );
    const store = storeWith({ records });
    expect(() => store.checkpoint({ homeKey: "../x", source: { dir: fresh("src") } })).toThrow(/at "homeKey"/);
  });

  it("reads the content key from the environment without ever echoing it", async () => {
    const hex = randomBytes(32).toString("hex");
    const fromHex = ContentKeyring.fromEnv("HOME_KEY", { HOME_KEY: hex });
    const fromBase64 = ContentKeyring.fromEnv("HOME_KEY", { HOME_KEY: Buffer.from(hex, "hex").toString("base64") });
    const wrapped = await fromHex.wrap(randomBytes(32), "st-env");
    expect((await fromBase64.unwrap(wrapped, "st-env")).length).toBe(32);
    expect(wrapped).not.toContain(hex);
    const short = "c2hvcnQta2V5";
    expect(() => ContentKeyring.fromEnv("HOME_KEY", { HOME_KEY: short })).toThrow(AgentComputerError);
    try {
      ContentKeyring.fromEnv("HOME_KEY", { HOME_KEY: short });
    } catch (error) {
      expect((error as Error).message).not.toContain(short);
    }
    expect(() => ContentKeyring.fromEnv("MISSING_KEY", {})).toThrow(/MISSING_KEY is not set/);
    // A wrapped key altered by one character fails its tag.
    const flipped = wrapped.slice(0, -2) + (wrapped.at(-2) === "A" ? "B" : "A") + wrapped.at(-1);
    expect((await rejection(fromHex.unwrap(flipped, "st-env"))).code).toBe("CHECKPOINT_CORRUPT");
  });
});
