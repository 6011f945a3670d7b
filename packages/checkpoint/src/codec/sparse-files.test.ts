import { execFileSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, mkdtemp, open, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { beforeAll, describe, expect, it } from "vitest";
import { findDataRuns } from "./data-runs.js";
import { packHome } from "./pack-home.js";
import { restoreHome } from "./restore-home.js";
import { encodeSparseMap } from "./sparse-map.js";

const GiB = 1024 ** 3;
const TiB = 1024 ** 4;
let root: string;

async function drain(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** A file of `size` bytes, holes everywhere but `runs`. */
async function sparseFile(path: string, size: number, runs: { offset: number; text: string }[]): Promise<void> {
  const handle = await open(path, "w");
  try {
    for (const run of runs) await handle.write(run.text, run.offset);
    await handle.truncate(size);
  } finally {
    await handle.close();
  }
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-sparse-"));
});

describe("sparse files", () => {
  it("packs a 3 GiB file of 8 KiB data as sparse and restores it with its holes and bytes", async () => {
    const home = join(root, "home");
    await mkdir(join(home, "logs"), { recursive: true });
    await sparseFile(join(home, "logs", "big.img"), 3 * GiB, [
      { offset: 0, text: "start" },
      { offset: 2 * GiB, text: "middle" },
      { offset: 3 * GiB - 4, text: "end!" },
    ]);
    const packed = packHome(home);
    const archive = await drain(packed.tar);
    const stats = await packed.stats;
    expect(stats.sparse).toBe(1);
    expect(archive.length).toBeLessThan(1024 * 1024);
    const target = join(root, "restored");
    await restoreHome(Readable.from([archive]), target);
    const restored = join(target, "logs", "big.img");
    const info = await stat(restored);
    expect(info.size).toBe(3 * GiB);
    expect(info.blocks * 512).toBeLessThan(4 * 1024 * 1024);
    const handle = await open(restored, "r");
    const read = async (offset: number, length: number) => {
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, offset);
      return buffer.toString("latin1");
    };
    expect(await read(0, 5)).toBe("start");
    expect(await read(2 * GiB, 6)).toBe("middle");
    expect(await read(3 * GiB - 4, 4)).toBe("end!");
    expect(await read(GiB, 4)).toBe("\0\0\0\0");
    await handle.close();
  }, 60_000);

  it("exports a home holding a 15 TiB file of a few bytes in under 5 s, its holes skipped, not read (issue 45)", async () => {
    const home = join(root, "huge-home");
    await mkdir(home, { recursive: true });
    await sparseFile(join(home, "huge.img"), 15 * TiB, [
      { offset: 0, text: "head" },
      { offset: 7 * TiB, text: "middle" },
      { offset: 15 * TiB - 4, text: "tail" },
    ]);
    const started = Date.now();
    const packed = packHome(home);
    const archive = await drain(packed.tar);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await packed.stats).sparse).toBe(1);
    expect(archive.length).toBeLessThan(1024 * 1024);
    const target = join(root, "huge-restored");
    await restoreHome(Readable.from([archive]), target, { maxFileBytes: 16 * TiB, maxTotalBytes: 16 * TiB });
    const handle = await open(join(target, "huge.img"), "r");
    try {
      expect((await handle.stat()).size).toBe(15 * TiB);
      const read = async (offset: number, length: number) => {
        const buffer = Buffer.alloc(length);
        await handle.read(buffer, 0, length, offset);
        return buffer.toString("latin1");
      };
      expect(await read(0, 4)).toBe("head");
      expect(await read(7 * TiB, 6)).toBe("middle");
      expect(await read(15 * TiB - 4, 4)).toBe("tail");
      expect(await read(3 * TiB, 4)).toBe("\0\0\0\0");
    } finally {
      await handle.close();
    }
  }, 30_000);

  it("stops packing within 1 s of its stream being destroyed while it looks for a 15 TiB file's holes", async () => {
    const home = join(root, "destroyed-home");
    await mkdir(home, { recursive: true });
    await sparseFile(join(home, "huge.img"), 15 * TiB, [{ offset: 9 * TiB, text: "data" }]);
    const packed = packHome(home);
    const settled = packed.stats.then(
      () => "finished",
      (error: { code?: string }) => error.code,
    );
    packed.tar.resume();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const destroyedAt = Date.now();
    packed.tar.destroy();
    const outcome = await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 1000, "still working"))]);
    expect(outcome).not.toBe("still working");
    expect(Date.now() - destroyedAt).toBeLessThan(1000);
  }, 10_000);

  it("reading a file for its holes (no SEEK_DATA helper) stops within 1 s of the abort, and refuses a file past the reading limit", async () => {
    const path = join(root, "scanned.img");
    await sparseFile(path, 15 * GiB, [{ offset: 14 * GiB, text: "late" }]);
    const fd = openSync(path, "r");
    try {
      const stop = new AbortController();
      const scanning = findDataRuns(fd, 15 * GiB, 4096, "scanned.img", { signal: stop.signal, seeker: undefined });
      const outcome = scanning.then(
        () => "finished",
        (error: { code?: string }) => error.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const abortedAt = Date.now();
      stop.abort();
      expect(await outcome).toBe("ABORTED");
      expect(Date.now() - abortedAt).toBeLessThan(1000);
      await expect(
        findDataRuns(fd, 15 * TiB, 4096, "scanned.img", { signal: new AbortController().signal, seeker: undefined }),
      ).rejects.toMatchObject({ code: "LIMIT_EXCEEDED" });
    } finally {
      closeSync(fd);
    }
  }, 20_000);

  it("finds the same runs by SEEK_DATA as by reading the file", async () => {
    const path = join(root, "both-ways.img");
    await sparseFile(path, 64 * 1024 * 1024, [
      { offset: 0, text: "a" },
      { offset: 5 * 1024 * 1024, text: "b" },
    ]);
    const fd = openSync(path, "r");
    try {
      const signal = new AbortController().signal;
      const sought = await findDataRuns(fd, 64 * 1024 * 1024, 8192, "both-ways.img", { signal, seeker: "perl" });
      const read = await findDataRuns(fd, 64 * 1024 * 1024, 8192, "both-ways.img", { signal, seeker: undefined });
      const covers = (runs: { offset: number; length: number }[], at: number) =>
        runs.some((run) => run.offset <= at && at < run.offset + run.length);
      for (const runs of [sought, read]) {
        expect(covers(runs, 0)).toBe(true);
        expect(covers(runs, 5 * 1024 * 1024)).toBe(true);
        expect(covers(runs, 30 * 1024 * 1024)).toBe(false);
        expect(runs.at(-1)).toEqual({ offset: 64 * 1024 * 1024, length: 0 });
      }
    } finally {
      closeSync(fd);
    }
  });

  it("writes an archive GNU tar extracts to the same bytes", async () => {
    const home = join(root, "gnu-home");
    await mkdir(home, { recursive: true });
    await sparseFile(join(home, "disk"), 64 * 1024 * 1024, [{ offset: 32 * 1024 * 1024, text: "inside" }]);
    const archive = await drain(packHome(home).tar);
    const out = join(root, "gnu-out");
    await mkdir(out);
    execFileSync("tar", ["-x", "-C", out], { input: archive });
    const bytes = await readFile(join(out, "disk"));
    expect(bytes.length).toBe(64 * 1024 * 1024);
    expect(bytes.subarray(32 * 1024 * 1024, 32 * 1024 * 1024 + 6).toString()).toBe("inside");
  });

  it("restores a sparse file GNU tar wrote", async () => {
    const source = join(root, "gnu-src");
    await mkdir(source, { recursive: true });
    await sparseFile(join(source, "vm.img"), 256 * 1024 * 1024, [{ offset: 100 * 1024 * 1024, text: "gnu" }]);
    const archive = execFileSync("tar", [
      "-c",
      "--format=pax",
      "--sparse",
      "--sparse-version=1.0",
      "-C",
      source,
      "vm.img",
    ]);
    const target = join(root, "from-gnu");
    await restoreHome(Readable.from([archive]), target);
    const info = await stat(join(target, "vm.img"));
    expect(info.size).toBe(256 * 1024 * 1024);
    expect(info.blocks * 512).toBeLessThan(1024 * 1024);
  });

  it("refuses a map with runs past the file's size or out of order, and an older sparse format", async () => {
    const entry = (map: Buffer, data: Buffer, realSize: number) => {
      const records = [
        "GNU.sparse.major=1",
        "GNU.sparse.minor=0",
        "GNU.sparse.name=evil",
        `GNU.sparse.realsize=${realSize}`,
      ];
      return tarWith(records, map, data);
    };
    const past = entry(encodeSparseMap([{ offset: 100, length: 4 }]), Buffer.from("abcd"), 50);
    await expect(restoreHome(Readable.from([past]), join(root, "bad-1"))).rejects.toMatchObject({
      code: "RESTORE_REJECTED",
    });
    const backwards = entry(
      encodeSparseMap([
        { offset: 10, length: 2 },
        { offset: 0, length: 2 },
      ]),
      Buffer.from("abcd"),
      50,
    );
    await expect(restoreHome(Readable.from([backwards]), join(root, "bad-2"))).rejects.toMatchObject({
      code: "RESTORE_REJECTED",
    });
    const old = tarWith(
      ["GNU.sparse.size=50", "GNU.sparse.numblocks=1", "GNU.sparse.name=evil"],
      Buffer.alloc(0),
      Buffer.from("x"),
    );
    await expect(restoreHome(Readable.from([old]), join(root, "bad-3"))).rejects.toMatchObject({
      code: "RESTORE_REJECTED",
    });
  });
});

/** A one-entry pax archive whose file data is `map` then `data`, made with GNU tar's own header layout. */
function tarWith(records: string[], map: Buffer, data: Buffer): Buffer {
  const record = (line: string) => {
    const body = ` ${line}\n`;
    let length = body.length + String(body.length).length;
    if (String(length).length + body.length !== length) length = body.length + String(length).length;
    return `${length}${body}`;
  };
  const paxBody = Buffer.from(records.map(record).join(""));
  const content = Buffer.concat([map, data]);
  const block = (name: string, type: string, size: number) => {
    const header = Buffer.alloc(512);
    header.write(name, 0);
    header.write("0000644\0", 100);
    header.write("0000000\0", 108);
    header.write("0000000\0", 116);
    header.write(`${size.toString(8).padStart(11, "0")}\0`, 124);
    header.write("00000000000\0", 136);
    header.write("        ", 148);
    header.write(type, 156);
    header.write("ustar\u000000", 257);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    return header;
  };
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
  return Buffer.concat([
    block("PaxHeader", "x", paxBody.length),
    pad(paxBody),
    block("GNUSparseFile.0/evil", "0", content.length),
    pad(content),
    Buffer.alloc(1024),
  ]);
}
