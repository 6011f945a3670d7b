import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { END, file, raw } from "./hostile-archives.test-helpers.js";
import { restoreHome } from "./restore-home.js";
import { StagingFileWriter } from "./staging-file-writer.js";

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-writer-"));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** More files than one batch, so the writer threads start. */
const MANY = 1200;

describe("StagingFileWriter", () => {
  it("writes every file on its threads with its bytes, mode and mtime", async () => {
    const writer = new StagingFileWriter(2);
    for (let i = 0; i < MANY; i++)
      await writer.add(join(root, `f${i}`), Buffer.from(`file ${i}`), i % 2 === 0 ? 0o600 : 0o640, 1_000_000 + i);
    await writer.finish();
    expect((await readdir(root)).length).toBe(MANY);
    for (const i of [0, 1, 257, MANY - 1]) {
      const path = join(root, `f${i}`);
      expect(await readFile(path, "utf8")).toBe(`file ${i}`);
      const info = await stat(path);
      expect(info.mode & 0o777).toBe(i % 2 === 0 ? 0o600 : 0o640);
      expect(info.mtimeMs).toBe((1_000_000 + i) * 1000);
    }
  });

  it("writes a home smaller than a batch without threads, the same way", async () => {
    const writer = new StagingFileWriter(2);
    await writer.add(join(root, "one"), Buffer.from("one"), 0o604, 42);
    await writer.finish();
    expect(await readFile(join(root, "one"), "utf8")).toBe("one");
    expect((await stat(join(root, "one"))).mode & 0o777).toBe(0o604);
    expect((await stat(join(root, "one"))).mtimeMs).toBe(42_000);
  });

  it("never replaces what is already there: a thread's EEXIST fails finish", async () => {
    await writeFile(join(root, `f${MANY - 5}`), "planted");
    const writer = new StagingFileWriter(2);
    let error: unknown;
    try {
      for (let i = 0; i < MANY; i++) await writer.add(join(root, `f${i}`), Buffer.from("new"), 0o644, 0);
      await writer.finish();
    } catch (caught) {
      error = caught;
      await writer.abort();
    }
    expect((error as NodeJS.ErrnoException)?.code).toBe("EEXIST");
    expect(await readFile(join(root, `f${MANY - 5}`), "utf8")).toBe("planted");
  });

  it("writes nothing more once aborted", async () => {
    const writer = new StagingFileWriter(2);
    for (let i = 0; i < MANY; i++) await writer.add(join(root, `f${i}`), Buffer.alloc(4096, 1), 0o644, 0);
    await writer.abort();
    const after = (await readdir(root)).length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await readdir(root)).length).toBe(after);
    expect(after).toBeLessThan(MANY);
  });
});

describe("restoreHome with its writer threads busy", () => {
  it("refuses a hostile entry after many small files and leaves nothing behind", async () => {
    const target = join(root, "home");
    const many = Array.from({ length: MANY }, (_, i) => file(`d${i % 10}/f${i}`, "z".repeat(3000)));
    const archive = Buffer.concat([...many, raw("d3/escape", { type: "2", linkname: "/etc" }), END]);
    const error = await restoreHome(Readable.from([archive]), target).catch((e) => e);
    expect(error).toBeInstanceOf(AgentComputerError);
    expect((error as AgentComputerError).code).toBe("RESTORE_REJECTED");
    expect(await readdir(root)).toEqual([]);
  });

  it("restores many small files whole, each with its content", async () => {
    const target = join(root, "home");
    const many = Array.from({ length: MANY }, (_, i) => file(`d${i % 10}/f${i}`, `content ${i}`));
    const stats = await restoreHome(Readable.from([Buffer.concat([...many, END])]), target);
    expect(stats.files).toBe(MANY);
    expect(await readFile(join(target, "d7", "f1187"), "utf8")).toBe("content 1187");
    expect(await readdir(root)).toEqual(["home"]);
  });
});
