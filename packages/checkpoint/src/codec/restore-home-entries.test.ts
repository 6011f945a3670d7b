import { randomBytes } from "node:crypto";
import { readFile, stat, symlink } from "node:fs/promises";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import type { HomeEntry, HomeEntryItem } from "./entry-reader.js";
import { digestTree } from "./home-tree.test-helpers.js";
import { restoreHomeEntries } from "./restore-home.js";
import type { RestoreLimits } from "./restore-limits.js";
import { expectRefusedUntouched, useRestoreTarget } from "./restore-target.test-helpers.js";

// restoreHomeEntries takes a home as entries instead of a tar (a chunked
// store's manifest). It must hold those entries to every check a tar's get
// (restore-home.attack.test.ts), and to the shape a tar header's syntax
// would have guaranteed.

const folders = useRestoreTarget("ac-entries-");

const MTIME = 1_700_000_000;
const dir = (path: string, mode = 0o755): HomeEntry => ({ kind: "directory", path, mode, mtime: MTIME });
/** A file's entry and its data, cut into `pieces` (0-byte pieces included, as a source may give). */
function file(path: string, data: Buffer | string, pieces = 1, mode = 0o644): HomeEntryItem[] {
  const bytes = Buffer.from(data);
  const cut: HomeEntryItem[] = [{ kind: "file", path, mode, mtime: MTIME, size: bytes.length }];
  const step = Math.ceil(bytes.length / pieces) || 1;
  for (let at = 0; at < bytes.length; at += step) cut.push(bytes.subarray(at, at + step), Buffer.alloc(0));
  return cut;
}
async function* items(list: readonly unknown[]): AsyncGenerator<HomeEntryItem> {
  for (const item of list) yield item as HomeEntryItem;
}

function expectRefused(list: readonly unknown[], code: string, limits?: RestoreLimits): Promise<AgentComputerError> {
  return expectRefusedUntouched(folders, () => restoreHomeEntries(items(list), folders.target, limits), code);
}

describe("restoreHomeEntries", () => {
  it("writes every entry as given: folders, small and large files in odd pieces, modes and mtimes", async () => {
    const large = randomBytes(3 * 1024 * 1024 + 17); // past the codec's small-file size: the calling thread writes it
    const small = randomBytes(70_000);
    const stats = await restoreHomeEntries(
      items([
        dir("work", 0o700),
        ...file("work/large.bin", large, 7),
        ...file("work/small.bin", small, 3, 0o600),
        ...file("work/empty", ""),
        dir("work/nested"),
        ...file("work/nested/note.txt", "a note", 1, 0o755),
      ]),
      folders.target,
    );
    expect(stats).toEqual({ files: 4, directories: 2, bytes: large.length + small.length + 6 });
    // Buffer.equals: toEqual walks 3 MiB byte by byte for seconds.
    expect((await readFile(join(folders.target, "work/large.bin"))).equals(large)).toBe(true);
    expect((await readFile(join(folders.target, "work/small.bin"))).equals(small)).toBe(true);
    expect(await readFile(join(folders.target, "work/nested/note.txt"), "utf8")).toBe("a note");
    expect((await stat(join(folders.target, "work/empty"))).size).toBe(0);
    expect((await stat(join(folders.target, "work/small.bin"))).mode & 0o777).toBe(0o600);
    expect((await stat(join(folders.target, "work/nested/note.txt"))).mode & 0o777).toBe(0o755);
    expect((await stat(join(folders.target, "work/large.bin"))).mtimeMs).toBe(MTIME * 1000);
    // The previous home was replaced whole.
    expect([...(await digestTree(folders.target)).keys()].sort()).toEqual([
      "work",
      "work/empty",
      "work/large.bin",
      "work/nested",
      "work/nested/note.txt",
      "work/small.bin",
    ]);
  });

  it("does not follow a symlink already in the target: the entry lands in the new home", async () => {
    await symlink(folders.outside, join(folders.target, "link"));
    await restoreHomeEntries(items(file("link/secret", "pwned")), folders.target);
    expect((await digestTree(folders.target)).get("link")).toBe("dir");
    expect(await readFile(join(folders.outside, "secret"), "utf8")).toBe("do not touch");
  });

  const cases: [string, unknown[], string, RestoreLimits?][] = [
    ["a path climbing out with ..", file("../outside/secret", "pwned"), "RESTORE_REJECTED"],
    ["an absolute path", file("/tmp/ac-entries-absolute", "pwned"), "RESTORE_REJECTED"],
    ["a path with a . segment", file("work/./x", "x"), "RESTORE_REJECTED"],
    ["a path with an empty segment", file("work//x", "x"), "RESTORE_REJECTED"],
    ["a path with a NUL byte", file("work/x\0y", "x"), "RESTORE_REJECTED"],
    ["a Windows-style ..\\ segment", file("..\\outside", "x"), "RESTORE_REJECTED"],
    ["the same path twice", [...file("a", "1"), ...file("a", "2")], "RESTORE_REJECTED"],
    ["a file under a file", [...file("a", "1"), ...file("a/b", "2")], "RESTORE_REJECTED"],
    ["a file where a folder was", [dir("a"), ...file("a", "2")], "RESTORE_REJECTED"],
    ["more data than the size says", [...file("a", "12"), Buffer.from("3")], "RESTORE_REJECTED"],
    ["a piece running past the size", [file("a", "1")[0], Buffer.from("12"), dir("b")], "RESTORE_REJECTED"],
    ["data before any entry", [Buffer.from("x"), ...file("a", "1")], "RESTORE_REJECTED"],
    [
      "less data than the size says, then an entry",
      [file("a", "123")[0], Buffer.from("1"), dir("b")],
      "RESTORE_REJECTED",
    ],
    ["less data than the size says, then the end", [file("a", "123")[0], Buffer.from("1")], "RESTORE_REJECTED"],
    ["a symbolic link", [{ kind: "symlink", path: "l", mode: 0o777, mtime: MTIME, target: "/" }], "RESTORE_REJECTED"],
    ["an entry with no path", [{ kind: "directory", mode: 0o755, mtime: MTIME }], "RESTORE_REJECTED"],
    ["a mode out of range", [{ ...dir("d"), mode: 0o170000 }], "RESTORE_REJECTED"],
    ["an mtime that is not a number", [{ ...dir("d"), mtime: Number.NaN }], "RESTORE_REJECTED"],
    ["an mtime past 2^40 seconds", [{ ...dir("d"), mtime: 2 ** 41 }], "RESTORE_REJECTED"],
    ["a negative size", [{ kind: "file", path: "f", mode: 0o644, mtime: MTIME, size: -1 }], "RESTORE_REJECTED"],
    ["a fractional size", [{ kind: "file", path: "f", mode: 0o644, mtime: MTIME, size: 1.5 }], "RESTORE_REJECTED"],
    ["something that is no entry", [null], "RESTORE_REJECTED"],
    ["more entries than the limit", [dir("a"), dir("b"), dir("c")], "LIMIT_EXCEEDED", { maxEntries: 2 }],
    ["a file over the file limit", file("big", "x".repeat(100)), "LIMIT_EXCEEDED", { maxFileBytes: 99 }],
    [
      "files over the total limit",
      [...file("a", "x".repeat(60)), ...file("b", "x".repeat(60))],
      "LIMIT_EXCEEDED",
      { maxTotalBytes: 100 },
    ],
    ["a path deeper than the limit", file("a/b/c/d", "x"), "LIMIT_EXCEEDED", { maxDepth: 3 }],
  ];
  for (const [name, list, code, limits] of cases)
    it(`refuses ${name}, leaving the target as it was`, () => expectRefused(list, code, limits));

  it("passes on the error of a source that fails midway, leaving the target as it was", async () => {
    const corrupt = new AgentComputerError("CHECKPOINT_CORRUPT", "a chunk does not open");
    async function* failing(): AsyncGenerator<HomeEntryItem> {
      for (let i = 0; i < 300; i++) yield* file(`f${i}`, `file ${i}`);
      yield file("last", "x".repeat(10))[0] as HomeEntry;
      throw corrupt;
    }
    const refused = () => restoreHomeEntries(failing(), folders.target);
    expect(await expectRefusedUntouched(folders, refused, "CHECKPOINT_CORRUPT")).toBe(corrupt);
  });
});
