import tar from "tar-stream";
import type { RestoreLimits } from "./restore-limits.js";
import { writeTarHeader } from "./tar-header.js";

/**
 * The hostile home archives every restore path must refuse: this
 * package's `restoreHome` and `checkHomeArchive`, and providers that
 * unpack homes in their machines (their tests import this file). Each is
 * [name, build, expected code, limits it needs].
 */
export type HostileArchive = [string, () => Promise<Buffer> | Buffer, string, RestoreLimits?];

export const END = Buffer.alloc(1024);

/** One raw ustar entry, with any field as hostile as a test needs. */
export function raw(
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

export function pax(records: Record<string, string>): Buffer {
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

export function file(path: string, content = "x"): Buffer {
  const header = Buffer.alloc(3 * 512 + path.length + 128);
  const n = writeTarHeader({ path, kind: "file", mode: 0o644, size: content.length, mtime: 0 }, header, 0);
  return Buffer.concat([header.subarray(0, n), pad(Buffer.from(content))]);
}

function pad(data: Buffer): Buffer {
  return Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

export async function tarStreamArchive(entries: [Partial<tar.Header> & { name: string }, string?][]): Promise<Buffer> {
  const pack = tar.pack();
  for (const [header, body] of entries) pack.entry(header, body ?? "");
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export const HOSTILE_ARCHIVES: readonly HostileArchive[] = [
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
    "a pax mtime of 1e20 seconds (utimes fails on it)",
    () => Buffer.concat([pax({ mtime: "1e20" }), raw("a", { data: Buffer.from("x") }), END]),
    "RESTORE_REJECTED",
  ],
  [
    "a pax mtime of 10^20 seconds written out",
    () => Buffer.concat([pax({ mtime: "100000000000000000000" }), raw("a", { data: Buffer.from("x") }), END]),
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
  ["depth beyond the limit", () => Buffer.concat([file("1/2/3/4/5/6/7/8/9"), END]), "LIMIT_EXCEEDED", { maxDepth: 8 }],
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
