import { execFile } from "node:child_process";
import { randomBytes, randomFillSync } from "node:crypto";
import { createWriteStream, mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { compiledScript } from "../../../../test/support/compiled-script.js";
import { digestTree } from "./home-tree.test-helpers.js";

const child = await compiledScript(join(import.meta.dirname, "checkpoint-round-trip.child.ts"));
let root: string | undefined;

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("checkpoint round trip at scale", () => {
  it("20,000 small files plus a 1 GiB file come back byte-identical with peak RSS under 200 MB", async () => {
    root = await mkdtemp(join(tmpdir(), "ac-round-trip-"));
    const home = join(root, "home");
    for (let i = 0; i < 20_000; i++) {
      const dir = join(home, `d${i % 100}`, `e${i % 7}`);
      if (i < 700) mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `f${i}.bin`), randomBytes(1024 + ((i * 7919) % (15 * 1024))));
    }
    await pipeline(
      Readable.from(
        (function* () {
          for (let i = 0; i < 1024; i++) yield randomFillSync(Buffer.allocUnsafe(1024 * 1024));
        })(),
      ),
      createWriteStream(join(home, "large.bin")),
    );
    const target = join(root, "restored");
    const { stdout } = await promisify(execFile)(process.execPath, [child, home, join(root, "home.sealed"), target], {
      maxBuffer: 1024 * 1024,
    });
    const report = JSON.parse(stdout);
    expect(report.packed.files).toBe(20_001);
    expect(report.restored.files).toBe(20_001);
    expect(report.restored.bytes).toBe(report.packed.bytes);
    expect(report.maxRssBytes).toBeLessThan(200 * 1024 * 1024);
    expect(await digestTree(target)).toEqual(await digestTree(home));
    process.stdout.write(`round trip peak RSS: ${(report.maxRssBytes / 1e6).toFixed(0)} MB\n`);
  }, 600_000);
});
