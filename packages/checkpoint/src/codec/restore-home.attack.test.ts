import { mkdir, mkdtemp, readdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import tar from "tar-stream";
import { beforeEach, describe, expect, it } from "vitest";
import { digestTree } from "./home-tree.test-helpers.js";
import { openCheckpoint } from "./open-checkpoint.js";
import { restoreHome } from "./restore-home.js";
import type { RestoreLimits } from "./restore-limits.js";
import { sealCheckpoint } from "./seal-checkpoint.js";
import { writeTarHeader } from "./tar-header.js";

const END = Buffer.alloc(1024);

/** One raw ustar entry, with any field as hostile as a test needs. */
function raw(
  name: string | Buffer,
  options: { type?: string; data?: Buffer; size?: number; linkname?: string; checksumDelta?: number } = {},
): Buffer {
  const data = options.data ?? Buffer.alloc(0);
  const header = Buffer.alloc(512);
  (typeof name === "string" ? Buffer.from(name) : name).copy(header, 0, 0, 100);
  header.write("0000644\0", 100);
  header.write("0000000\0", 108);
  header.write("0000000\0", 116);
  header.write(`${(options.size ?? data.length).toString(8).padStart(11, "0")}\0`, 124);
  header.write("00000000000\0", 136);
  header.write(options.type ?? "0", 156);
  if (options.linkname) header.write(options.linkname, 157);
  header.write("ustar\u000000", 257);
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${(sum + (options.checksumDelta ?? 0)).toString(8).padStart(6, "0")}\0 `, 148);
  const pad = (512 - (data.length % 512)) % 512;
  return Buffer.concat([header, data, Buffer.alloc(pad)]);
}

function pax(records: Record<string, string>): Buffer {
  const body = Object.entries(records)
    .map(([k, v]) => {
      const line = ` ${k}=${v}\n`;
      let length = Buffer.byteLength(line) + 1;
      while (String(length).length + Buffer.byteLength(line) !== length) length++;
      return `${length}${line}`;
    })
    .join("");
  return raw("PaxHeader", { type: "x", data: Buffer.from(body) });
}

function file(path: string, content = "x"): Buffer {
  const header = Buffer.alloc(3 * 512 + path.length + 128);
  const n = writeTarHeader({ path, kind: "file", mode: 0o644, size: content.length, mtime: 0 }, header, 0);
  return Buffer.concat([header.subarray(0, n), pad(Buffer.from(content))]);
}

function pad(data: Buffer): Buffer {
  return Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

async function tarStreamArchive(entries: [Partial<tar.Header> & { name: string }, string?][]): Promise<Buffer> {
  const pack = tar.pack();
  for (const [header, body] of entries) pack.entry(header, body ?? "");
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

let root: string;
let target: string;
let outside: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-attack-"));
  target = join(root, "home");
  outside = join(root, "outside");
  await mkdir(join(target, "work"), { recursive: true });
  await writeFile(join(target, "work", "keep.txt"), "previous work");
  await mkdir(outside);
  await writeFile(join(outside, "secret"), "do not touch");
});

async function expectRefused(archive: Buffer | AsyncIterable<Uint8Array>, code: string, limits?: RestoreLimits) {
  const before = await digestTree(root);
  const input = Buffer.isBuffer(archive) ? Readable.from([archive]) : archive;
  const error = await restoreHome(input, target, limits).catch((e) => e);
  expect(error, "the restore should fail").toBeInstanceOf(AgentComputerError);
  expect((error as AgentComputerError).code, (error as Error).message).toBe(code);
  expect(await digestTree(root)).toEqual(before);
  expect((await readdir(root)).sort()).toEqual(["home", "outside"]);
}

describe("restoreHome refuses hostile archives, leaving the target as it was", () => {
  const cases: [string, () => Promise<Buffer> | Buffer, string, RestoreLimits?][] = [
    ["../ traversal", () => Buffer.concat([raw("../evil"), END]), "RESTORE_REJECTED"],
    ["a/../../b traversal", () => Buffer.concat([raw("a/../../b"), END]), "RESTORE_REJECTED"],
    ["an absolute path", () => Buffer.concat([raw("/etc/passwd"), END]), "RESTORE_REJECTED"],
    ["////etc/passwd", () => Buffer.concat([raw("////etc/passwd"), END]), "RESTORE_REJECTED"],
    ["Windows ..\\ traversal", () => Buffer.concat([raw("..\\..\\evil"), END]), "RESTORE_REJECTED"],
    ["a Windows drive prefix", () => Buffer.concat([raw("C:\\evil"), END]), "RESTORE_REJECTED"],
    ["a . segment", () => Buffer.concat([raw("./a"), END]), "RESTORE_REJECTED"],
    ["an empty segment", () => Buffer.concat([raw("a//b"), END]), "RESTORE_REJECTED"],
    [
      "a symlink entry (CVE-2021-32803 shape: link then a file through it)",
      () =>
        tarStreamArchive([
          [{ name: "link", type: "symlink", linkname: "../outside" }],
          [{ name: "link/secret" }, "pwned"],
        ]),
      "RESTORE_REJECTED",
    ],
    [
      "a hardlink entry (CVE-2021-37712 / 2024 / 2026 shapes)",
      () => tarStreamArchive([[{ name: "hard", type: "link", linkname: "../outside/secret" }]]),
      "RESTORE_REJECTED",
    ],
    ["a character device", () => Buffer.concat([raw("dev", { type: "3" }), END]), "RESTORE_REJECTED"],
    ["a block device", () => Buffer.concat([raw("blk", { type: "4" }), END]), "RESTORE_REJECTED"],
    ["a FIFO", () => Buffer.concat([raw("fifo", { type: "6" }), END]), "RESTORE_REJECTED"],
    ["a GNU sparse entry", () => Buffer.concat([raw("sparse", { type: "S" }), END]), "RESTORE_REJECTED"],
    [
      "a pax 1.0 sparse file",
      () => Buffer.concat([pax({ "GNU.sparse.major": "1", "GNU.sparse.minor": "0" }), raw("s"), END]),
      "RESTORE_REJECTED",
    ],
    [
      "a pax path override to ../",
      () => Buffer.concat([pax({ path: "../../outside/secret" }), raw("harmless", { data: Buffer.from("x") }), END]),
      "RESTORE_REJECTED",
    ],
    [
      "a global pax path",
      () => Buffer.concat([raw("g", { type: "g", data: Buffer.from("14 path=evil\n") }), raw("a"), END]),
      "RESTORE_REJECTED",
    ],
    ["an exact duplicate", () => Buffer.concat([file("a", "1"), file("a", "2"), END]), "RESTORE_REJECTED"],
    [
      "a directory replaced by a file",
      () => Buffer.concat([raw("d/", { type: "5" }), file("d"), END]),
      "RESTORE_REJECTED",
    ],
    ["a file under a file", () => Buffer.concat([file("f"), file("f/g"), END]), "RESTORE_REJECTED"],
    [
      "an overlong path",
      () => Buffer.concat([pax({ path: `${"abcdefgh/".repeat(500)}x` }), raw("x"), END]),
      "LIMIT_EXCEEDED",
    ],
    ["an overlong name", () => Buffer.concat([pax({ path: "n".repeat(300) }), raw("x"), END]), "LIMIT_EXCEEDED"],
    [
      "depth beyond the limit",
      () => Buffer.concat([file("1/2/3/4/5/6/7/8/9"), END]),
      "LIMIT_EXCEEDED",
      { maxDepth: 8 },
    ],
    [
      "a NUL byte in a pax path",
      () => Buffer.concat([pax({ path: "safe\u0000../../evil" }), raw("x"), END]),
      "RESTORE_REJECTED",
    ],
    [
      "a NUL byte inside a name field",
      () => Buffer.concat([raw(Buffer.from("safe\u0000../evil")), END]),
      "RESTORE_REJECTED",
    ],
    [
      "a tar bomb over the entry limit",
      () => Buffer.concat([...Array.from({ length: 50 }, (_, i) => file(`f${i}`)), END]),
      "LIMIT_EXCEEDED",
      { maxEntries: 20 },
    ],
    [
      "a tar bomb over the byte limit",
      () => Buffer.concat([raw("big", { size: 10 * 1024 ** 3 }), END]),
      "LIMIT_EXCEEDED",
      { maxTotalBytes: 1024 ** 3, maxFileBytes: 1024 ** 4 },
    ],
    [
      "a file over the file limit",
      () => Buffer.concat([file("f", "0123456789"), END]),
      "LIMIT_EXCEEDED",
      { maxFileBytes: 5 },
    ],
    [
      "a size field larger than the data",
      () => Buffer.concat([raw("a", { size: 4096, data: Buffer.from("short") }).subarray(0, 1024)]),
      "RESTORE_REJECTED",
    ],
    [
      "a truncated tar (cut mid-header)",
      () => Buffer.concat([file("a"), file("b")]).subarray(0, 1200),
      "RESTORE_REJECTED",
    ],
    ["a tar without its end-of-archive marker", () => Buffer.concat([file("a"), file("b")]), "RESTORE_REJECTED"],
    ["data after the end-of-archive marker", () => Buffer.concat([file("a"), END, file("evil")]), "RESTORE_REJECTED"],
    ["a bad header checksum", () => Buffer.concat([raw("a", { checksumDelta: 1 }), END]), "RESTORE_REJECTED"],
    ["not a tar at all", () => Buffer.from("<html>not a home</html>".padEnd(2048, " ")), "RESTORE_REJECTED"],
  ];

  it(`has at least 20 hostile inputs (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
  });

  for (const [name, build, code, limits] of cases) {
    it(name, async () => {
      await expectRefused(await build(), code, limits);
    });
  }

  describe("a sealed archive tampered with after good entries were staged", () => {
    const sealKey = { dataKey: Buffer.alloc(32, 7), storageId: "home-x", revision: 2 };
    async function sealedHome(): Promise<Buffer> {
      const entries = Array.from({ length: 40 }, (_, i) => file(`f${i}`, "y".repeat(5000)));
      const chunks: Buffer[] = [];
      for await (const c of sealCheckpoint(Readable.from([Buffer.concat([...entries, END])]), sealKey))
        chunks.push(c as Buffer);
      return Buffer.concat(chunks);
    }
    const opened = (sealed: Buffer, key = sealKey) => openCheckpoint(Readable.from([sealed]), key);

    it("a flipped bit in the last segment", async () => {
      const sealed = await sealedHome();
      sealed[sealed.length - 20] = (sealed[sealed.length - 20] as number) ^ 4;
      await expectRefused(opened(sealed), "CHECKPOINT_CORRUPT");
    });
    it("truncated mid-stream", async () => {
      const sealed = await sealedHome();
      await expectRefused(opened(sealed.subarray(0, sealed.length - 1000)), "CHECKPOINT_CORRUPT");
    });
    it("another revision's object", async () => {
      await expectRefused(opened(await sealedHome(), { ...sealKey, revision: 3 }), "CHECKPOINT_CORRUPT");
    });
  });

  it("does not follow a symlink already in the target: the entry lands in the new home", async () => {
    await symlink(outside, join(target, "link"));
    await restoreHome(Readable.from([Buffer.concat([file("link/secret", "pwned"), END])]), target);
    const restored = await digestTree(target);
    expect(restored.get("link")).toBe("dir");
    expect(await digestTree(outside)).toEqual(new Map([["secret", expect.stringMatching(/^file /)]]));
    const { readFile } = await import("node:fs/promises");
    expect(await readFile(join(outside, "secret"), "utf8")).toBe("do not touch");
  });

  it("accepts a GNU tar archive (gnu format, long names)", async () => {
    const { execFileSync } = await import("node:child_process");
    const source = join(root, "src");
    const long = `${"d".repeat(120)}/${"f".repeat(130)}`;
    await mkdir(join(source, "d".repeat(120)), { recursive: true });
    await writeFile(join(source, long), "long");
    const archive = execFileSync("tar", ["-c", "--format=gnu", "-C", source, "d".repeat(120)]);
    await restoreHome(Readable.from([archive]), target);
    expect((await digestTree(target)).has(long)).toBe(true);
  });

  it("refuses a second restore of one target while the first runs, with CONFLICT, and keeps the first one's home", async () => {
    const slow = async function* () {
      yield file("first.txt", "one");
      await new Promise((resolve) => setTimeout(resolve, 50));
      yield END;
    };
    const first = restoreHome(slow(), target);
    const second = restoreHome(Readable.from([Buffer.concat([file("second.txt", "two"), END])]), target);
    const [a, b] = await Promise.allSettled([first, second]);
    expect(a.status).toBe("fulfilled");
    expect(b).toMatchObject({ status: "rejected", reason: { code: "CONFLICT" } });
    expect(AgentComputerError.is((b as PromiseRejectedResult).reason, "CONFLICT")).toBe(true);
    expect([...(await digestTree(target)).keys()]).toEqual(["first.txt"]);
    await restoreHome(Readable.from([Buffer.concat([file("third.txt", "three"), END])]), target);
    expect([...(await digestTree(target)).keys()]).toEqual(["third.txt"]);
  });
});
