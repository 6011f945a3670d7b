// The small-files half of `npm run bench -- s3` (issue 48's "Must show"): a
// home of 20,000 files of 1 to 16 KiB (the codec bench's shape), checkpointed
// once, then restored on a fresh host (download, open, check, write) beside
// GNU `tar -x` of the same home's tar from a local file, in the same run.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { packHome } from "@agent-computer/checkpoint";
import { runBench } from "@agent-computer/testing/bench";
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";

const FILES = 20_000;

function sh(command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", command], { stdio: "inherit" });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))));
  });
}

/** 20,000 files of 1 to 16 KiB in 700 folders, seeded like the codec bench's. */
function writeSmallHome(dir: string): void {
  let seed = 1;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let i = 0; i < FILES; i++) {
    const folder = join(dir, `d${i % 100}`, `e${i % 7}`);
    if (i < 700) mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `f${i}.bin`), randomBytes(1024 + Math.floor(next() * 15 * 1024)));
  }
}

export async function benchSmallFiles(options: {
  config: S3ClientConfig;
  bucket: string;
  work: string;
  runs: number;
}): Promise<void> {
  const { config, bucket, work } = options;
  const home = join(work, "small-home");
  writeSmallHome(home);
  const tarFile = join(work, "small-home.tar");
  await pipeline(packHome(home).tar, createWriteStream(tarFile));
  const records = new MemoryHomeRecords();
  records.create({ homeKey: "small", storageId: "st-small" });
  const key = randomBytes(32);
  const store = (dataDir: string) =>
    new ObjectAgentHomeStore({ s3: config, bucket, dataDir, keyring: new ContentKeyring(key), records });
  const { bytes } = await store(join(work, "small-writer")).checkpoint({ homeKey: "small", source: { dir: home } });
  let runs = 0;
  // Removed after the bench, not inside either side's time. Each side's writes are flushed after its
  // run, so neither side's timing holds the other's writeback.
  const flush = () => execFileSync("sync");
  const made: string[] = [];
  await runBench(
    `home-store-s3: ${FILES} small files (1 to 16 KiB) against s3rver`,
    [
      {
        name: "restore on a fresh host (download packs, open, check, write) vs cat | tar -x of the home's tar",
        unit: "MB/s",
        work: bytes as number,
        subject: {
          label: "ObjectAgentHomeStore.restore (fresh host)",
          run: async () => {
            const dataDir = join(work, `small-reader-${++runs}`);
            made.push(dataDir);
            await store(dataDir).restore({ homeKey: "small", target: { mounted: true } });
          },
          after: flush,
        },
        baseline: {
          label: "cat | tar -x",
          run: async () => {
            const dir = join(work, `small-tar-${++runs}`);
            made.push(dir);
            mkdirSync(dir);
            await sh(`cat '${tarFile}' | tar -xf - -C '${dir}'`);
          },
          after: flush,
        },
      },
    ],
    { warmup: 0, runs: options.runs },
  );
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
}
