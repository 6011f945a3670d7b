import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import tar from "tar-stream";
import { describe, expect, it } from "vitest";
import { checkHomeArchive } from "./check-home-archive.js";
import { HOSTILE_ARCHIVES } from "./hostile-archives.test-helpers.js";

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("checkHomeArchive", () => {
  it("passes a good archive on byte for byte, with the counts find sees after unpacking", async () => {
    const pack = tar.pack();
    pack.entry({ name: "a/b/c.txt" }, "hello");
    pack.entry({ name: "a/empty/", type: "directory" });
    pack.entry({ name: "big.bin" }, Buffer.alloc(3 * 1024 * 1024, 7));
    for (let i = 0; i < 2000; i++) pack.entry({ name: `small/${i}.txt` }, `file ${i}`);
    pack.finalize();
    const archive = await drain(Readable.from(pack));
    const checked = checkHomeArchive(Readable.from([archive.subarray(0, 1000), archive.subarray(1000)]));
    expect((await drain(checked.tar)).equals(archive)).toBe(true);
    // Folders: a, a/b (implied), a/empty, small (implied).
    const bytes =
      5 + 3 * 1024 * 1024 + Array.from({ length: 2000 }, (_, i) => `file ${i}`.length).reduce((x, y) => x + y);
    expect(await checked.stats).toEqual({ files: 2002, directories: 4, bytes });
  });

  for (const [name, build, code, limits] of HOSTILE_ARCHIVES) {
    it(`refuses ${name} before passing on the refused entry`, async () => {
      const archive = await build();
      const checked = checkHomeArchive(Readable.from([archive]), limits);
      const passed: Buffer[] = [];
      const streamed = await (async () => {
        for await (const chunk of checked.tar) passed.push(chunk as Buffer);
      })().then(
        () => undefined,
        (error: unknown) => error,
      );
      const error = await checked.stats.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AgentComputerError);
      expect((error as AgentComputerError).code, (error as Error).message).toBe(code);
      // Only "data after the end marker" is found once every entry was passed on.
      if (streamed === undefined) expect(name).toMatch(/after the end-of-archive/);
      expect(Buffer.concat(passed).length).toBeLessThan(archive.length);
    });
  }
});
