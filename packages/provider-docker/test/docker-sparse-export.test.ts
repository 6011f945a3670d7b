import { mkdtemp, open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { restoreHome } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// Issue 45, finding 4, on the Docker provider's own export path (the
// mounted home packed on the host by the checkpoint codec's packHome):
// a bot's 15 TiB file of a few bytes exports in seconds as its real data,
// and an export destroyed mid-way closes within 1 s.

const env = await dockerTestEnvironment("docker sparse export");
const TiB = 1024 ** 4;

if (!env.missing) {
  const provider = env.provider({ dataDir: await temporaryDataDir() });
  const owned: Machine[] = [];
  afterAll(async () => {
    for (const m of owned) await m.destroy().catch(() => {});
  });
  const withHugeFile = async (homeKey: string) => {
    const m = await provider.provision({ computerId: `sparse-${homeKey}`, homeKey });
    owned.push(m);
    const made = await m.exec({
      shell: "printf head > huge.img && truncate -s 15T huge.img && printf tail >> huge.img",
    });
    expect(made.exitCode).toBe(0);
    return m;
  };

  describe("docker: a home holding a 15 TiB sparse file", () => {
    it("exports in under 5 s, the archive holding the file's real data", async () => {
      const m = await withHugeFile(`huge-${Date.now()}`);
      const started = Date.now();
      const chunks: Buffer[] = [];
      for await (const chunk of await m.files.exportWorkspace()) chunks.push(chunk as Buffer);
      expect(Date.now() - started).toBeLessThan(5000);
      const archive = Buffer.concat(chunks);
      expect(archive.length).toBeLessThan(1024 * 1024);
      const target = join(await mkdtemp(join(tmpdir(), "docker-sparse-")), "home");
      await restoreHome(Readable.from([archive]), target, { maxFileBytes: 16 * TiB, maxTotalBytes: 16 * TiB });
      const handle = await open(join(target, "huge.img"), "r");
      try {
        expect((await handle.stat()).size).toBe(15 * TiB + 4);
        const read = async (offset: number) => {
          const bytes = Buffer.alloc(4);
          await handle.read(bytes, 0, 4, offset);
          return bytes.toString("latin1");
        };
        expect(await read(0)).toBe("head");
        expect(await read(15 * TiB)).toBe("tail");
      } finally {
        await handle.close();
      }
    }, 120_000);

    it("an export destroyed mid-way closes within 1 s", async () => {
      const m = await withHugeFile(`destroyed-${Date.now()}`);
      const tar = await m.files.exportWorkspace();
      const closed = new Promise<number>((resolve) => tar.once("close", () => resolve(Date.now())));
      tar.resume();
      await new Promise((resolve) => setTimeout(resolve, 20));
      const destroyedAt = Date.now();
      tar.destroy();
      const outcome = await Promise.race([closed, new Promise<string>((r) => setTimeout(r, 1000, "still open"))]);
      expect(outcome).not.toBe("still open");
      expect((outcome as number) - destroyedAt).toBeLessThan(1000);
    }, 120_000);
  });
}
