// The incremental half of `npm run bench -- s3` (issue 30's "Must show"):
// a mixed home (many small files, some large), format 2 against format 1
// on the same server in the same run, with the bytes the server received
// and sent counted by the relay in s3rver-process.ts.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, cpSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join, relative } from "node:path";
import { performance } from "node:perf_hooks";
import { type BenchSide, runBench } from "@agent-computer/testing/bench";
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";

const MIB = 1024 * 1024;

export interface Counters {
  received: number;
  sent: number;
}

/** `homeMiB` of files: 60% in files of 4 to 64 KiB, 40% in eight large ones. Returns the small files' paths. */
export function writeMixedHome(dir: string, homeMiB: number): string[] {
  const small: string[] = [];
  let left = Math.floor(homeMiB * MIB * 0.6);
  for (let i = 0; left > 0; i++) {
    const folder = join(dir, "projects", `p${i % 50}`);
    if (i < 50) mkdirSync(folder, { recursive: true });
    const size = Math.min(left, 4096 + ((i * 7919) % (60 * 1024)));
    const path = join(folder, `f${i}.txt`);
    writeFileSync(path, randomBytes(size));
    small.push(path);
    left -= size;
  }
  mkdirSync(join(dir, "tools"), { recursive: true });
  const large = Math.ceil((homeMiB * MIB * 0.4) / 8 / MIB);
  const chunk = randomBytes(MIB);
  for (let f = 0; f < 8; f++) {
    const fd = openSync(join(dir, "tools", `blob-${f}.bin`), "w");
    for (let i = 0; i < large; i++) {
      chunk.writeUInt32LE(f * 100_000 + i, 0);
      writeSync(fd, chunk);
    }
    closeSync(fd);
  }
  return small;
}

/** Changes 1 MiB across 10 files: 100 KiB rewritten in each of ten small files. */
function changeTenFiles(small: string[], round: number): void {
  for (let i = 0; i < 10; i++)
    writeFileSync(small[(round * 10 + i * 97) % small.length] as string, randomBytes(100 * 1024 + 64));
}

export async function benchIncremental(options: {
  config: S3ClientConfig;
  bucket: string;
  work: string;
  homeMiB: number;
  counters: () => Promise<Counters>;
  runs: number;
}): Promise<void> {
  const { config, bucket, work, homeMiB, counters } = options;
  const home = join(work, "mixed-home");
  const small = writeMixedHome(home, homeMiB);
  const records = new MemoryHomeRecords();
  const key = randomBytes(32);
  let homes = 0;
  const store = (format: 1 | 2, dataDir: string) =>
    new ObjectAgentHomeStore({ s3: config, bucket, dataDir, keyring: new ContentKeyring(key), records, format });
  // A first checkpoint is timed alone. Deleting the home it made is untimed
  // (`after`), then `sync`: left to the kernel, that 1 GiB deletion landed in
  // the next timed run (an incremental checkpoint right after it took 5.5 s,
  // against 2.0 s after a one-second pause or a `sync` of 40 ms).
  const firstCheckpoint = (format: 1 | 2, label: string): BenchSide => {
    let made: { homeKey: string; dataDir: string } | undefined;
    return {
      label,
      run: async () => {
        const homeKey = `first-${format}-${++homes}`;
        records.create({ homeKey, storageId: `st-${homeKey}` });
        made = { homeKey, dataDir: join(work, homeKey) };
        await store(format, made.dataDir).checkpoint({ homeKey, source: { dir: home } });
      },
      after: async () => {
        if (made === undefined) return;
        await store(format, made.dataDir).delete(made.homeKey);
        rmSync(made.dataDir, { recursive: true, force: true });
        execFileSync("sync");
      },
    };
  };
  records.create({ homeKey: "inc", storageId: "st-inc" });
  const writer = store(2, join(work, "inc-writer"));
  const reader = store(2, join(work, "inc-reader"));
  await writer.checkpoint({ homeKey: "inc", source: { dir: home } });
  await reader.latest("inc");
  // A mounted home (the cache folder a provider mounts, checkpointed in place): a copy of the same home.
  records.create({ homeKey: "mnt", storageId: "st-mnt" });
  const mounter = store(2, join(work, "mnt-store"));
  cpSync(home, mounter.homeDir("mnt"), { recursive: true, preserveTimestamps: true });
  const mountedSmall = small.map((path) => join(mounter.homeDir("mnt"), relative(home, path)));
  // As a bot's home between checkpoints: a file changed within two seconds of one is not stamped by it
  // (mounted-home-read.ts), so the copy just made would be read whole again by the first timed run.
  await new Promise((resolve) => setTimeout(resolve, 2_100));
  await mounter.checkpoint({ homeKey: "mnt", source: { mounted: true } });
  execFileSync("sync");
  let round = 0;
  const uploaded: number[] = [];
  const downloaded: number[] = [];

  const title = `home-store-s3 format 2: a ${homeMiB} MiB mixed home (${small.length} small files, 8 large) against s3rver`;
  await runBench(
    title,
    [
      {
        name: "first checkpoint: format 2 (chunks, manifest) vs format 1 (today's whole archive)",
        unit: "ms",
        subject: firstCheckpoint(2, "format 2 first checkpoint"),
        baseline: firstCheckpoint(1, "format 1 first checkpoint"),
      },
      {
        name: "second checkpoint after 1 MiB changed across 10 files vs a first checkpoint, both format 2",
        unit: "ms",
        subject: {
          label: "format 2 incremental checkpoint",
          run: async () => {
            changeTenFiles(small, ++round);
            const before = await counters();
            await writer.checkpoint({ homeKey: "inc", source: { dir: home } });
            uploaded.push((await counters()).received - before.received);
          },
          // Its own leftovers (the previous copy it removed) settle before the next run, as the baseline's do.
          after: () => execFileSync("sync"),
        },
        baseline: firstCheckpoint(2, "format 2 first checkpoint"),
      },
      {
        name: "a mounted home's next checkpoint after 1 MiB changed across 10 files vs a first checkpoint of the home from a folder, both format 2",
        unit: "ms",
        subject: {
          label: "format 2 incremental checkpoint of a mounted home",
          run: async () => {
            changeTenFiles(mountedSmall, ++round);
            await mounter.checkpoint({ homeKey: "mnt", source: { mounted: true } });
          },
          after: () => execFileSync("sync"),
        },
        baseline: firstCheckpoint(2, "format 2 first checkpoint"),
      },
    ],
    { warmup: 0, runs: options.runs },
  );
  // Restores: the reader's cache holds the revision before the writer's latest; a fresh host holds nothing.
  const cachedMs: number[] = [];
  const freshMs: number[] = [];
  for (let i = 0; i < options.runs; i++) {
    await reader.latest("inc");
    changeTenFiles(small, ++round);
    await writer.checkpoint({ homeKey: "inc", source: { dir: home } });
    const before = await counters();
    let start = performance.now();
    await reader.latest("inc");
    cachedMs.push(performance.now() - start);
    downloaded.push((await counters()).sent - before.sent);
    const freshDir = join(work, `fresh-${i}`);
    start = performance.now();
    await store(2, freshDir).latest("inc");
    freshMs.push(performance.now() - start);
    rmSync(freshDir, { recursive: true, force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  process.stdout.write(
    `restore of the latest revision: into a cache at the previous revision ${median(cachedMs).toFixed(0)} ms | fresh host ${median(freshMs).toFixed(0)} ms | ratio ${(median(cachedMs) / median(freshMs)).toFixed(3)} (lower is better)\n`,
  );
  process.stdout.write(
    `bytes s3rver received for the incremental checkpoint: median ${(median(uploaded) / MIB).toFixed(2)} MiB (target < 4 MiB)\n` +
      `bytes s3rver sent restoring into a cache at the previous revision: median ${(median(downloaded) / MIB).toFixed(2)} MiB (target < 4 MiB)\n`,
  );
}
