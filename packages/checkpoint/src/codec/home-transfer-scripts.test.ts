import { spawn } from "node:child_process";
import { mkdir, mkdtemp, open, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { HOME_TRANSFER_SCRIPTS } from "./home-transfer-scripts.js";
import { restoreHome } from "./restore-home.js";

const TiB = 1024 ** 4;

/** Runs the export script on this host the way providers run it in a machine (`sh -c <script> <name> <home>`). */
function exportByScript(home: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", HOME_TRANSFER_SCRIPTS.exportHome, "export-home", home], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    let errors = "";
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`exit ${code}: ${errors}`)),
    );
  });
}

describe("the in-machine export script", () => {
  it("exports a home holding a 15 TiB file of a few bytes in under 5 s, as an archive the restore reads (issue 45)", async () => {
    const home = await mkdtemp(join(tmpdir(), "ac-script-export-"));
    await mkdir(join(home, "notes"));
    await writeFile(join(home, "notes", "today.txt"), "remember this");
    const handle = await open(join(home, "disk.img"), "w");
    await handle.write("head", 0);
    await handle.write("tail", 15 * TiB - 4);
    await handle.close();
    const started = Date.now();
    const archive = await exportByScript(home);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(archive.length).toBeLessThan(1024 * 1024);
    const target = join(home, "..", `${home.split("/").pop()}-restored`);
    await restoreHome(Readable.from([archive]), target, { maxFileBytes: 16 * TiB, maxTotalBytes: 16 * TiB });
    const restored = await open(join(target, "disk.img"), "r");
    try {
      expect((await restored.stat()).size).toBe(15 * TiB);
      const tail = Buffer.alloc(4);
      await restored.read(tail, 0, 4, 15 * TiB - 4);
      expect(tail.toString()).toBe("tail");
    } finally {
      await restored.close();
    }
  }, 30_000);
});
