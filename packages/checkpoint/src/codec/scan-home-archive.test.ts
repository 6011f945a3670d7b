import { randomBytes } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { afterAll, describe, expect, it } from "vitest";
import { HEADER_BYTES, SEALED_SEGMENT_BYTES } from "./checkpoint-format.js";
import { END, file, raw } from "./hostile-archives.test-helpers.js";
import { openCheckpoint } from "./open-checkpoint.js";
import { packHome } from "./pack-home.js";
import { listArchivedFolder, readArchivedFile } from "./scan-home-archive.js";
import { sealCheckpoint } from "./seal-checkpoint.js";

const base = mkdtempSync(join(tmpdir(), "scan-home-archive-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const key = { dataKey: randomBytes(32), storageId: "home-scan", revision: 4 };

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

async function code(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentComputerError);
  return (error as AgentComputerError).code;
}

/** A sealed stream that counts the sealed bytes it handed on. */
function counted(sealed: Buffer): { stream: Readable; read: () => number } {
  let read = 0;
  const pieces: Buffer[] = [];
  for (let i = 0; i < sealed.length; i += 64 * 1024) pieces.push(sealed.subarray(i, i + 64 * 1024));
  const stream = Readable.from(
    (function* () {
      for (const piece of pieces) {
        read += piece.length;
        yield piece;
      }
    })(),
  );
  return { stream, read: () => read };
}

const home = join(base, "home");
const big = randomBytes(3 * 1024 * 1024 + 17);
mkdirSync(join(home, "bots/alpha/notes"), { recursive: true });
mkdirSync(join(home, "many"), { recursive: true });
writeFileSync(join(home, "a.txt"), "first file\n");
writeFileSync(join(home, "bots/alpha/notes/todo.md"), "- water the plants\n");
writeFileSync(join(home, "bots/alpha/empty"), "");
writeFileSync(join(home, "bots/alpha/big.bin"), big);
writeFileSync(join(home, "bots/alpha/line\nbreak"), "a name with a newline");
utimesSync(join(home, "a.txt"), 1_700_000_000, 1_700_000_000);
for (let i = 0; i < 10_000; i++) writeFileSync(join(home, "many", `f${i}`), String(i));
// Links are never packed: the archive has none, so none is listed.
symlinkSync("/etc", join(home, "bots/alpha/etc-link"));
// A sparse file: 4 MiB with 64 KiB of data in the middle.
const sparsePath = join(home, "bots/alpha/sparse.img");
const fd = openSync(sparsePath, "w");
writeSync(fd, Buffer.alloc(64 * 1024, 7), 0, 64 * 1024, 2 * 1024 * 1024);
closeSync(fd);
const sealedHome = (async () => {
  const tar = await collect(packHome(home).tar);
  return { tar, sealed: await collect(sealCheckpoint(Readable.from([tar]), key)) };
})();

describe("listArchivedFolder / readArchivedFile (a streamed scan of an archive without an index)", () => {
  it("lists folders of a sealed home as the folder itself holds them, links left out as never packed", async () => {
    const { sealed } = await sealedHome;
    const top = await listArchivedFolder(openCheckpoint(Readable.from([sealed]), key), "");
    expect(top.map((e) => [e.name, e.kind])).toEqual([
      ["a.txt", "file"],
      ["bots", "directory"],
      ["many", "directory"],
    ]);
    expect(top[0]).toMatchObject({ path: "a.txt", size: 11, modifiedAt: 1_700_000_000_000 });
    const alpha = await listArchivedFolder(openCheckpoint(Readable.from([sealed]), key), "bots/alpha/");
    expect(alpha.map((e) => e.name)).toEqual(["big.bin", "empty", "line\nbreak", "notes", "sparse.img"]);
    expect(alpha.find((e) => e.name === "big.bin")).toMatchObject({ size: big.length, kind: "file" });
    expect(alpha.find((e) => e.name === "sparse.img")).toMatchObject({ size: 2 * 1024 * 1024 + 64 * 1024 });
    const many = await listArchivedFolder(openCheckpoint(Readable.from([sealed]), key), "many");
    expect(many).toHaveLength(10_000);
    expect(many.slice(0, 3).map((e) => e.name)).toEqual(["f0", "f1", "f10"]);
  });

  it("reads a file or a range of it, holes of a sparse file as zeros", async () => {
    const { sealed } = await sealedHome;
    const open = () => openCheckpoint(Readable.from([sealed]), key);
    expect((await readArchivedFile(open(), "bots/alpha/notes/todo.md")).bytes.toString()).toBe("- water the plants\n");
    const range = await readArchivedFile(open(), "bots/alpha/big.bin", { start: 1_000_000, end: 2_500_000 });
    expect(range.size).toBe(big.length);
    expect(range.bytes.equals(big.subarray(1_000_000, 2_500_000))).toBe(true);
    // Clamped to the file, like the other stores.
    expect((await readArchivedFile(open(), "a.txt", { start: 6, end: 1000 })).bytes.toString()).toBe("file\n");
    expect((await readArchivedFile(open(), "bots/alpha/empty")).bytes.length).toBe(0);
    const sparse = await readArchivedFile(open(), "bots/alpha/sparse.img", {
      start: 2 * 1024 * 1024 - 10,
      end: 2 * 1024 * 1024 + 10,
    });
    expect([...sparse.bytes]).toEqual([...Buffer.alloc(10), ...Buffer.alloc(10, 7)]);
    expect((await readArchivedFile(open(), "bots/alpha/line\nbreak")).bytes.toString()).toBe("a name with a newline");
  });

  it("stops reading the archive once the file was read", async () => {
    const { sealed } = await sealedHome;
    const source = counted(sealed);
    await readArchivedFile(openCheckpoint(source.stream, key), "a.txt");
    expect(source.read()).toBeLessThan(sealed.length / 4);
  });

  it("refuses paths outside the home, missing paths and the wrong kind, typed", async () => {
    const { tar } = await sealedHome;
    const plain = () => Readable.from([tar]);
    for (const bad of ["../x", "/etc", "bots/../../etc", "a\0b"]) {
      expect(await code(listArchivedFolder(plain(), bad))).toBe("INVALID_ARGUMENT");
      expect(await code(readArchivedFile(plain(), bad))).toBe("INVALID_ARGUMENT");
    }
    expect(await code(listArchivedFolder(plain(), "nowhere"))).toBe("NOT_FOUND");
    expect(await code(readArchivedFile(plain(), "bots/alpha/nothing"))).toBe("NOT_FOUND");
    expect(await code(readArchivedFile(plain(), "bots/alpha/etc-link"))).toBe("NOT_FOUND");
    expect(await code(listArchivedFolder(plain(), "a.txt"))).toBe("INVALID_ARGUMENT");
    expect(await code(readArchivedFile(plain(), "bots"))).toBe("INVALID_ARGUMENT");
    expect(await code(readArchivedFile(plain(), ""))).toBe("INVALID_ARGUMENT");
  });

  it("lists a link of a foreign archive as a link and never reads through it; implied folders are listed", async () => {
    const archive = Buffer.concat([
      file("deep/er/x.txt", "x"),
      raw("deep/to-etc", { type: "2", linkname: "/etc" }),
      raw("deep/fifo", { type: "6" }),
      END,
    ]);
    const entries = await listArchivedFolder(Readable.from([archive]), "deep");
    expect(entries.map((e) => [e.name, e.kind])).toEqual([
      ["er", "directory"],
      ["to-etc", "symlink"],
    ]);
    expect(await code(readArchivedFile(Readable.from([archive]), "deep/to-etc"))).toBe("INVALID_ARGUMENT");
    expect((await readArchivedFile(Readable.from([archive]), "deep/er/x.txt")).bytes.toString()).toBe("x");
  });

  it("refuses a hostile archive as its restore would, and tampered sealed bytes as CHECKPOINT_CORRUPT", async () => {
    const hostile = Buffer.concat([file("ok.txt"), file("../outside.txt"), END]);
    expect(await code(listArchivedFolder(Readable.from([hostile]), ""))).toBe("RESTORE_REJECTED");
    expect(await code(readArchivedFile(Readable.from([hostile]), "outside.txt"))).toBe("RESTORE_REJECTED");
    const { sealed } = await sealedHome;
    // A flipped byte in the segment that holds a.txt (the first file), and one near the end.
    for (const at of [HEADER_BYTES + 700, sealed.length - SEALED_SEGMENT_BYTES / 2]) {
      const tampered = Buffer.from(sealed);
      tampered[at] = (tampered[at] as number) ^ 1;
      expect(await code(listArchivedFolder(openCheckpoint(Readable.from([tampered]), key), "bots"))).toBe(
        "CHECKPOINT_CORRUPT",
      );
    }
    const tampered = Buffer.from(sealed);
    tampered[HEADER_BYTES + 700] = (tampered[HEADER_BYTES + 700] as number) ^ 1;
    expect(await code(readArchivedFile(openCheckpoint(Readable.from([tampered]), key), "a.txt"))).toBe(
      "CHECKPOINT_CORRUPT",
    );
    // Another revision's key: refused on the header.
    expect(
      await code(readArchivedFile(openCheckpoint(Readable.from([sealed]), { ...key, revision: 5 }), "a.txt")),
    ).toBe("CHECKPOINT_CORRUPT");
  });
});
