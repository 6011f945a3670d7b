// `npm run bench -- checkpoint [--runs N] [--warmup N]`: pack, seal, open and
// restore throughput for 1 GiB of incompressible data and for 20,000 small
// files of 1-16 KiB, each beside its baseline measured in the same run:
// GNU `tar -c | cat` and `cat | tar -x` for pack and restore, node:crypto
// AES-256-GCM in 64 KiB segments without streams for seal and open.
import { execFileSync, spawn } from "node:child_process";
import { createCipheriv, createDecipheriv, randomBytes, randomFillSync } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { openCheckpoint } from "../src/codec/open-checkpoint.js";
import { packHome } from "../src/codec/pack-home.js";
import { restoreHome } from "../src/codec/restore-home.js";
import { sealCheckpoint } from "../src/codec/seal-checkpoint.js";

const SEGMENT = 64 * 1024;
const key = { dataKey: randomBytes(32), storageId: "bench-home", revision: 1 };

function sh(command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", command], { stdio: "inherit" });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))));
  });
}

async function drain(stream: AsyncIterable<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.length;
  return bytes;
}

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return chunks;
}

/** Chunks of 1 MiB, as a file or pack stream would deliver them. */
function chunked(buffer: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buffer.length; i += 1024 * 1024) out.push(buffer.subarray(i, i + 1024 * 1024));
  return out;
}

/** The baseline for seal: a cipher per 64 KiB segment over one buffer, no streams. */
function sealSegments(plain: Buffer): number {
  const k = randomBytes(32);
  let out = 0;
  for (let i = 0, n = 0; i < plain.length; i += SEGMENT, n++) {
    const nonce = Buffer.alloc(12);
    nonce.writeUInt32BE(n, 7);
    const cipher = createCipheriv("aes-256-gcm", k, nonce, { authTagLength: 16 });
    out += cipher.update(plain.subarray(i, i + SEGMENT)).length;
    cipher.final();
    out += cipher.getAuthTag().length;
  }
  return out;
}

/** The baseline for open: the same segments deciphered and verified, no streams. */
function segmentsFor(plain: Buffer): { key: Buffer; segments: { nonce: Buffer; body: Buffer; tag: Buffer }[] } {
  const k = randomBytes(32);
  const segments = [];
  for (let i = 0, n = 0; i < plain.length; i += SEGMENT, n++) {
    const nonce = Buffer.alloc(12);
    nonce.writeUInt32BE(n, 7);
    const cipher = createCipheriv("aes-256-gcm", k, nonce, { authTagLength: 16 });
    const body = cipher.update(plain.subarray(i, i + SEGMENT));
    cipher.final();
    segments.push({ nonce, body, tag: cipher.getAuthTag() });
  }
  return { key: k, segments };
}

function openSegments(sealed: ReturnType<typeof segmentsFor>): number {
  let out = 0;
  for (const s of sealed.segments) {
    const decipher = createDecipheriv("aes-256-gcm", sealed.key, s.nonce, { authTagLength: 16 });
    decipher.setAuthTag(s.tag);
    out += decipher.update(s.body).length;
    decipher.final();
  }
  return out;
}

async function casesFor(label: string, home: string, scratch: string): Promise<BenchCase[]> {
  const plain = Buffer.concat(await collect(packHome(home).tar));
  const tarFile = join(scratch, `${label}.tar`);
  writeFileSync(tarFile, plain);
  const sealed = Buffer.concat(await collect(sealCheckpoint(Readable.from(chunked(plain)), key)));
  const baselineSealed = segmentsFor(plain);
  let n = 0;
  const fresh = (side: string) => join(scratch, `${label}-${side}-${n++}`);
  return [
    {
      name: `pack ${label}`,
      unit: "MB/s",
      work: plain.length,
      subject: { label: "packHome", run: () => drain(packHome(home).tar) },
      baseline: { label: "tar -c | cat", run: () => sh(`tar -cf - -C '${home}' . | cat > /dev/null`) },
    },
    {
      name: `seal ${label}`,
      unit: "MB/s",
      work: plain.length,
      subject: { label: "sealCheckpoint", run: () => drain(sealCheckpoint(Readable.from(chunked(plain)), key)) },
      baseline: { label: "GCM 64 KiB segments", run: () => sealSegments(plain) },
    },
    {
      name: `open ${label}`,
      unit: "MB/s",
      work: plain.length,
      subject: { label: "openCheckpoint", run: () => drain(openCheckpoint(Readable.from(chunked(sealed)), key)) },
      baseline: { label: "GCM 64 KiB segments", run: () => openSegments(baselineSealed) },
    },
    {
      name: `restore ${label}`,
      unit: "MB/s",
      work: plain.length,
      subject: {
        label: "restoreHome",
        run: () => restoreHome(createReadStream(tarFile, { highWaterMark: 1024 * 1024 }), fresh("ours")),
      },
      baseline: {
        label: "cat | tar -x",
        run: () => {
          const dir = fresh("tar");
          mkdirSync(dir);
          return sh(`cat '${tarFile}' | tar -xf - -C '${dir}'`);
        },
      },
    },
  ];
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), "ac-bench-checkpoint-"));
  try {
    const small = join(scratch, "small-home");
    let seed = 1;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let i = 0; i < 20_000; i++) {
      const dir = join(small, `d${i % 100}`, `e${i % 7}`);
      if (i < 700) mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `f${i}.bin`), randomBytes(1024 + Math.floor(next() * 15 * 1024)));
    }
    const large = join(scratch, "large-home");
    mkdirSync(large);
    const out = createWriteStream(join(large, "blob.bin"));
    await pipeline(
      Readable.from(
        (function* () {
          for (let i = 0; i < 1024; i++) yield randomFillSync(Buffer.allocUnsafe(1024 * 1024));
        })(),
      ),
      out,
    );
    execFileSync("sync");
    const cases = [
      ...(await casesFor("20,000 small files", small, scratch)),
      ...(await casesFor("1 GiB incompressible", large, scratch)),
    ];
    await runBench("checkpoint codec", cases, benchOptionsFromArgv());
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
