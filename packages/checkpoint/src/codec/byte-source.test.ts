import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { ByteSource } from "./byte-source.js";
import { stageHome } from "./restore-home.js";

async function* chunksOf(...chunks: Buffer[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

describe("ByteSource", () => {
  it("reads zero bytes when every chunk is spent (an empty file's data after a header on a chunk boundary)", async () => {
    const source = new ByteSource(chunksOf(Buffer.alloc(512, 1), Buffer.alloc(512, 2)));
    expect((await source.read(512))?.[0]).toBe(1);
    expect(await source.read(0)).toEqual(Buffer.alloc(0));
    expect((await source.read(512))?.[0]).toBe(2);
    expect(await source.read(0)).toEqual(Buffer.alloc(0));
    expect(await source.read(1)).toBeUndefined();
  });
});

describe("restoring an archive whose every block arrives as its own chunk", () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-computer-byte-source-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("restores empty files whose headers end exactly at a chunk boundary", async () => {
    const home = join(dir, "home");
    execFileSync("mkdir", ["-p", join(home, "notes")]);
    writeFileSync(join(home, "notes", "empty.txt"), "");
    writeFileSync(join(home, "notes", "after.txt"), "after the empty one");
    writeFileSync(join(home, "last-empty"), "");
    const tar = execFileSync("tar", ["--numeric-owner", "-C", home, "-cf", "-", "notes", "last-empty"]);
    // One 512-byte block per chunk: every header ends at a chunk boundary, as a transport may deliver it.
    const blocks = Array.from({ length: tar.length / 512 }, (_, i) => tar.subarray(i * 512, (i + 1) * 512));
    const staged = await stageHome(Readable.from(blocks), join(dir, "restored"));
    const out = staged.stagingDir;
    expect(readdirSync(join(out, "notes")).sort()).toEqual(["after.txt", "empty.txt"]);
    expect(readFileSync(join(out, "notes", "empty.txt")).length).toBe(0);
    expect(readFileSync(join(out, "notes", "after.txt"), "utf8")).toBe("after the empty one");
    expect(readFileSync(join(out, "last-empty")).length).toBe(0);
  });
});
