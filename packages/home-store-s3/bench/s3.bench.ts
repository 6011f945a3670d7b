// `npm run bench -- s3 [--runs N] [--warmup N]`: the first checkpoint and a
// fresh host's restore of a 500 MiB home (HOME_BENCH_MIB to change) through
// ObjectAgentHomeStore against a local S3 server (s3rver, its own process),
// beside a plain multipart upload (lib-storage) and download of the same
// archive bytes, in the same run; then the peak RSS of a process that only
// checkpoints; then 20,000 small files restored beside `tar -x`
// (small-files.ts); then a mixed home (incremental.ts). `--home-mib N` sets both
// homes' size (default 500 and 1024; HOME_BENCH_MIB still works for the first).
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { packHome } from "@agent-computer/checkpoint";
import { benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { CreateBucketCommand, GetObjectCommand, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";
import { benchIncremental } from "./incremental.js";
import { benchSmallFiles } from "./small-files.js";

const MIB = 1024 * 1024;
const flag = process.argv.indexOf("--home-mib");
const flagMiB = flag === -1 ? undefined : Number(process.argv[flag + 1]);
const homeMiB = flagMiB ?? Number(process.env.HOME_BENCH_MIB ?? 500);
const mixedMiB = flagMiB ?? 1024;
const PART_BYTES = 8 * MIB;
const bucket = "bench-homes";

function configFor(port: number): S3ClientConfig {
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  };
}

function storeFor(port: number, dataDir: string, records: MemoryHomeRecords, key: Buffer): ObjectAgentHomeStore {
  return new ObjectAgentHomeStore({
    s3: configFor(port),
    bucket,
    dataDir,
    keyring: new ContentKeyring(key),
    records,
    partBytes: PART_BYTES,
  });
}

/** Eight files of incompressible bytes, written in 1 MiB chunks (never the whole home in memory). */
async function writeHome(dir: string): Promise<void> {
  mkdirSync(join(dir, "work"), { recursive: true });
  const perFile = Math.ceil(homeMiB / 8);
  const chunk = randomBytes(MIB);
  for (let f = 0; f < 8; f++) {
    await pipeline(
      (function* () {
        for (let i = 0; i < perFile; i++) {
          chunk.writeUInt32LE(f * 100_000 + i, 0);
          yield Buffer.from(chunk);
        }
      })(),
      createWriteStream(join(dir, "work", `file-${f}.bin`)),
    );
  }
}

const discard = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

/** Child mode: one checkpoint, then report this process's peak RSS. */
async function rssChild(port: number, home: string, dataDir: string): Promise<void> {
  const records = new MemoryHomeRecords();
  records.create({ homeKey: "bench", storageId: "st-rss" });
  const store = storeFor(port, dataDir, records, randomBytes(32));
  await store.checkpoint({ homeKey: "bench", source: { dir: home } });
  process.stdout.write(`${process.resourceUsage().maxRSS}\n`);
}

async function main(): Promise<void> {
  const [mode, port, home, dataDir] = process.argv.slice(2);
  if (mode === "--rss-child") return rssChild(Number(port), home as string, dataDir as string);

  const work = mkdtempSync(join(tmpdir(), "s3-bench-"));
  let server: ChildProcess | undefined;
  try {
    const serverScript = fileURLToPath(new URL("./s3rver-process.ts", import.meta.url));
    // s3rver makes the continuation token of a truncated listing with DES, which OpenSSL 3 keeps in its legacy provider.
    server = spawn(
      process.execPath,
      ["--openssl-legacy-provider", "--import", "tsx", serverScript, join(work, "bucket")],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const [serverPort, controlPort] = await new Promise<[number, number]>((resolve, reject) => {
      server?.stdout?.once("data", (chunk: Buffer) =>
        resolve(chunk.toString().trim().split(" ").map(Number) as [number, number]),
      );
      server?.once("exit", () => reject(new Error("the S3 server exited")));
    });
    const client = new S3Client(configFor(serverPort));
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const home = join(work, "home");
    await writeHome(home);

    const records = new MemoryHomeRecords();
    records.create({ homeKey: "bench", storageId: "st-bench" });
    const key = randomBytes(32);
    const writer = storeFor(serverPort, join(work, "writer"), records, key);
    const first = await writer.checkpoint({ homeKey: "bench", source: { dir: home } });
    const archiveBytes = first.bytes as number;
    let readers = 0;
    // Each run checkpoints a new home (its own storage id, so no chunk is shared): a checkpoint of an unchanged
    // home uploads nothing, which would measure the chunk index, not the upload. Deleted after the bench.
    const firsts: string[] = [];
    const firstCheckpoint = async () => {
      const homeKey = `first-${firsts.length}`;
      firsts.push(homeKey);
      records.create({ homeKey, storageId: `st-${homeKey}` });
      await storeFor(serverPort, join(work, homeKey), records, key).checkpoint({ homeKey, source: { dir: home } });
    };

    await runBench(
      `home-store-s3: a ${homeMiB} MiB home of eight files against s3rver on 127.0.0.1 (baselines: 8 MiB parts, 4 in flight)`,
      [
        {
          name: "first checkpoint (pack, check into cache, name, seal and upload chunks, manifest, commit) vs plain multipart upload of the archive",
          unit: "MB/s",
          work: archiveBytes,
          subject: {
            label: "ObjectAgentHomeStore.checkpoint (new home)",
            run: firstCheckpoint,
            // The checkpoint writes its home into the cache; that writeback is flushed here, not in the
            // baseline's next run (which writes nothing to disk).
            after: () => execFileSync("sync"),
          },
          baseline: {
            label: "lib-storage Upload of packHome's tar",
            run: () =>
              new Upload({
                client,
                params: { Bucket: bucket, Key: "plain/home.tar", Body: packHome(home).tar },
                partSize: PART_BYTES,
                queueSize: 4,
              }).done(),
          },
        },
        {
          name: "restore into an empty cache (download, open, check, write) vs plain download of the archive",
          unit: "MB/s",
          work: archiveBytes,
          subject: {
            label: "ObjectAgentHomeStore.restore (fresh host)",
            run: async () => {
              await storeFor(serverPort, join(work, `reader-${++readers}`), records, key).restore({
                homeKey: "bench",
                target: { mounted: true },
              });
            },
            // Not the restore's work, so outside its time; `sync` so the kernel's share of that
            // deletion does not land in the next timed run (incremental.ts found that).
            after: () => {
              rmSync(join(work, `reader-${readers}`), { recursive: true, force: true });
              execFileSync("sync");
            },
          },
          baseline: {
            label: "GetObject of the plain tar, drained",
            run: async () => {
              const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: "plain/home.tar" }));
              await pipeline(got.Body as NodeJS.ReadableStream, discard());
            },
          },
        },
      ],
      { warmup: 0, runs: 3, ...benchOptionsFromArgv() },
    );
    for (const homeKey of firsts) {
      await storeFor(serverPort, join(work, homeKey), records, key).delete(homeKey);
      rmSync(join(work, homeKey), { recursive: true, force: true });
    }

    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", fileURLToPath(import.meta.url), "--rss-child", String(serverPort), home, join(work, "rss")],
      { encoding: "utf8" },
    );
    const maxRssKiB = Number(child.stdout.trim().split("\n").at(-1));
    process.stdout.write(
      `peak RSS of a process checkpointing the ${homeMiB} MiB home: ${(maxRssKiB / 1024).toFixed(0)} MiB (1 MiB chunks and packs of about 4 MiB, 8 uploading and 8 waiting)\n`,
    );
    const counters = async () =>
      (await (await fetch(`http://127.0.0.1:${controlPort}/counters`)).json()) as { received: number; sent: number };
    const incrementalRuns = benchOptionsFromArgv().runs ?? 3;
    await benchSmallFiles({ config: configFor(serverPort), bucket, work, runs: incrementalRuns });
    await benchIncremental({
      config: configFor(serverPort),
      bucket,
      work,
      homeMiB: mixedMiB,
      counters,
      runs: incrementalRuns,
    });
    client.destroy();
  } finally {
    server?.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
