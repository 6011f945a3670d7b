import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp, readdir, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { compiledScript } from "../../../../test/support/compiled-script.js";
import { digestTree } from "./home-tree.test-helpers.js";
import { packHome } from "./pack-home.js";
import { recoverInterruptedRestore, restoreHome, stageHome } from "./restore-home.js";

const child = await compiledScript(join(import.meta.dirname, "restore-home.crash-child.ts"));
let root: string;
let archive: string;
let oldArchive: string;
let oldDigest: Map<string, string>;
let newDigest: Map<string, string>;

async function makeHome(dir: string, files: number, content: string): Promise<void> {
  for (let i = 0; i < files; i++) {
    await mkdir(join(dir, `d${i % 20}`), { recursive: true });
    await writeFile(join(dir, `d${i % 20}`, `f${i}`), `${content} ${i} `.repeat(200));
  }
}

/** Runs the child restore, kills it after `afterMs` (from its start), resolves whether it had finished. */
function restoreInChild(target: string, afterMs: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, archive, target], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    proc.stdout.on("data", (chunk) => {
      output += chunk;
      if (output.startsWith("start\n") && !output.includes("armed")) {
        output += "armed";
        setTimeout(() => proc.kill("SIGKILL"), afterMs);
      }
    });
    proc.on("error", reject);
    proc.on("exit", () => resolve(output.includes("done")));
  });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-crash-"));
  await makeHome(join(root, "old-src"), 50, "old");
  await makeHome(join(root, "new-src"), 3000, "new");
  archive = join(root, "new.tar");
  oldArchive = join(root, "old.tar");
  await pipeline(packHome(join(root, "new-src")).tar, createWriteStream(archive));
  await pipeline(packHome(join(root, "old-src")).tar, createWriteStream(oldArchive));
  oldDigest = await digestTree(join(root, "old-src"));
  newDigest = await digestTree(join(root, "new-src"));
});

describe("a crash during restore leaves the previous home intact", () => {
  it("kill -9 of the restoring process at random points", async () => {
    const target = join(root, "homes", "h");
    // How long one full restore takes in a child, to spread the kills over it.
    const started = Date.now();
    await restoreInChild(join(root, "probe", "h"), 60_000);
    const fullMs = Date.now() - started;
    const outcomes = { previous: 0, restored: 0 };
    for (let i = 0; i < 12; i++) {
      const { createReadStream } = await import("node:fs");
      await restoreHome(createReadStream(oldArchive), target);
      const finished = await restoreInChild(target, Math.random() * fullMs);
      await recoverInterruptedRestore(target);
      const now = await digestTree(target);
      if (finished) expect(now).toEqual(newDigest);
      else expect([oldDigest, newDigest]).toContainEqual(now);
      outcomes[now.size === oldDigest.size ? "previous" : "restored"]++;
      expect(await readdir(join(root, "homes"))).toEqual(["h"]);
    }
    // The kills must have landed mid-restore at least once to prove anything.
    expect(outcomes.previous).toBeGreaterThan(0);
  }, 120_000);

  it("rolls back a swap interrupted between its two renames", async () => {
    const { createReadStream } = await import("node:fs");
    const target = join(root, "between", "h");
    await restoreHome(createReadStream(oldArchive), target);
    const staged = await stageHome(createReadStream(archive), target);
    // The state a crash after the first rename leaves: no target, a previous copy, a complete staging folder.
    await rename(target, join(root, "between", ".h.previous-deadbeef0000"));
    await recoverInterruptedRestore(target);
    expect(await digestTree(target)).toEqual(oldDigest);
    expect(await readdir(join(root, "between"))).toEqual(["h"]);
    await staged.discard();
  });

  it("finishes cleanup when the crash came after the swap", async () => {
    const { createReadStream } = await import("node:fs");
    const target = join(root, "after", "h");
    await restoreHome(createReadStream(oldArchive), target);
    await mkdir(join(root, "after", ".h.previous-0123456789ab"));
    await mkdir(join(root, "after", ".h.restore-0123456789ab"));
    // The next restore recovers first, then proceeds.
    await restoreHome(createReadStream(archive), target);
    expect(await digestTree(target)).toEqual(newDigest);
    expect(await readdir(join(root, "after"))).toEqual(["h"]);
  });
});
