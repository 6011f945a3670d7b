import { createHash } from "node:crypto";
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rm,
  symlink,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HomeEntryItem } from "./entry-reader.js";
import { END, file, HOSTILE_ARCHIVES, pax, raw } from "./hostile-archives.test-helpers.js";
import { packHome } from "./pack-home.js";
import { readHomeArchive } from "./read-home-archive.js";
import { restoreHome } from "./restore-home.js";
import { encodeSparseMap } from "./sparse-map.js";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-read-archive-"));
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** Each entry as a line, each file's bytes as their digest: what the reader gave. */
async function linesOf(items: AsyncIterable<HomeEntryItem>): Promise<string[]> {
  const lines: string[] = [];
  let hash: ReturnType<typeof createHash> | undefined;
  let line = "";
  const close = () => {
    if (hash) lines.push(`${line} ${hash.digest("hex")}`);
    hash = undefined;
  };
  for await (const item of items) {
    if (item instanceof Uint8Array) {
      hash?.update(item);
      continue;
    }
    close();
    const { kind, path, mode, mtime } = item;
    // A folder's time is left out: no restore keeps it (writing the folder's files moves it).
    line = `${kind} ${path} ${mode.toString(8)} ${kind === "directory" ? "-" : mtime}`;
    if (item.kind === "file") {
      line += ` ${item.size}`;
      hash = createHash("sha256");
    } else lines.push(line);
  }
  close();
  return lines;
}

/** The same lines for a folder on disk, walked in the packer's order. */
async function linesOfFolder(dir: string, rel = ""): Promise<string[]> {
  const lines: string[] = [];
  const names = (await readdir(join(dir, rel))).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const name of names) {
    const path = rel === "" ? name : `${rel}/${name}`;
    const info = await lstat(join(dir, path));
    const head = `${(info.mode & 0o7777).toString(8)} ${Math.floor(info.mtimeMs / 1000)}`;
    if (info.isDirectory()) {
      lines.push(`directory ${path} ${(info.mode & 0o7777).toString(8)} -`);
      lines.push(...(await linesOfFolder(dir, path)));
    } else if (info.isFile()) {
      const digest = createHash("sha256")
        .update(await readFile(join(dir, path)))
        .digest("hex");
      lines.push(`file ${path} ${head} ${info.size} ${digest}`);
    }
  }
  return lines;
}

describe("readHomeArchive", () => {
  it("gives the entries and bytes a restore of the same archive makes on disk, sparse files and modes included", async () => {
    const home = join(root, "home");
    await mkdir(join(home, "src", "deep"), { recursive: true });
    await writeFile(join(home, "src", "deep", "notes.txt"), "hello");
    await writeFile(join(home, "empty"), "");
    await writeFile(join(home, "big.bin"), Buffer.alloc(3 * 1024 * 1024 + 17, 7));
    await writeFile(join(home, "private.txt"), "secret", { mode: 0o600 });
    await chmod(join(home, "src"), 0o750);
    // A folder its owner cannot write: the restore keeps the owner's access, so the entry says so too.
    await mkdir(join(home, "locked"), { mode: 0o555 });
    await utimes(join(home, "empty"), 1_234_567, 1_234_567);
    // Holes before, between and after two runs of data.
    const sparse = await open(join(home, "disk.img"), "w");
    await sparse.write("first", 2 * 1024 * 1024);
    await sparse.write("second", 5 * 1024 * 1024);
    await sparse.truncate(9 * 1024 * 1024);
    await sparse.close();
    await symlink("/etc/passwd", join(home, "planted-link"));
    const packed = packHome(home);
    const read = await linesOf(readHomeArchive(packed.tar));
    expect((await packed.stats).sparse).toBe(1);

    const restored = join(root, "restored");
    await restoreHome(packHome(home).tar, restored);
    expect(read).toEqual(await linesOfFolder(restored));
    expect(read.filter((l) => l.startsWith("file disk.img"))).toHaveLength(1);
    expect(read.some((l) => l.includes("planted-link"))).toBe(false);
  });

  it("gives a sparse entry whose map ends at its last data (no closing run, as packHome writes) its trailing hole", async () => {
    const map = encodeSparseMap([{ offset: 4096, length: 5 }]);
    const archive = Buffer.concat([
      pax({
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": "disk.img",
        "GNU.sparse.realsize": "10000",
      }),
      raw("GNUSparseFile.0/disk.img", { data: Buffer.concat([map, Buffer.from("hello")]) }),
      END,
    ]);
    const bytes: Buffer[] = [];
    for await (const item of readHomeArchive(Readable.from([archive])))
      if (item instanceof Uint8Array) bytes.push(Buffer.from(item));
      else expect(item).toMatchObject({ kind: "file", path: "disk.img", size: 10_000 });
    const expected = Buffer.alloc(10_000);
    expected.write("hello", 4096);
    expect(Buffer.concat(bytes).equals(expected)).toBe(true);
  });

  it("states the folders a deeper path implies, as the restore makes them", async () => {
    const items = await linesOf(
      readHomeArchive(Readable.from([Buffer.concat([file("a/b/c.txt", "hi"), Buffer.alloc(1024)])])),
    );
    expect(items.map((l) => l.split(" ").slice(0, 3).join(" "))).toEqual([
      "directory a 755",
      "directory a/b 755",
      "file a/b/c.txt 644",
    ]);
  });

  for (const [name, build, code, limits] of HOSTILE_ARCHIVES) {
    it(`refuses ${name} as the restore does`, async () => {
      const archive = await build();
      const failure = await linesOf(readHomeArchive(Readable.from([archive]), limits)).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(AgentComputerError);
      expect((failure as AgentComputerError).code, (failure as Error).message).toBe(code);
    });
  }

  it("closes the archive's stream when its reader stops early", async () => {
    const archive = Readable.from(
      (async function* () {
        yield Buffer.concat([file("one.txt", "1"), file("two.txt", "2")]);
        await new Promise(() => {}); // never ends: only a close stops it
      })(),
    );
    for await (const item of readHomeArchive(archive)) if (!(item instanceof Uint8Array)) break;
    expect(archive.destroyed).toBe(true);
  });
});
