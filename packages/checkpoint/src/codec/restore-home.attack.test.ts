import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { digestTree } from "./home-tree.test-helpers.js";
import { END, file, HOSTILE_ARCHIVES } from "./hostile-archives.test-helpers.js";
import { openCheckpoint } from "./open-checkpoint.js";
import { restoreHome } from "./restore-home.js";
import type { RestoreLimits } from "./restore-limits.js";
import { expectRefusedUntouched, useRestoreTarget } from "./restore-target.test-helpers.js";
import { sealCheckpoint } from "./seal-checkpoint.js";

const folders = useRestoreTarget("ac-attack-");

function expectRefused(archive: Buffer | AsyncIterable<Uint8Array>, code: string, limits?: RestoreLimits) {
  const input = Buffer.isBuffer(archive) ? Readable.from([archive]) : archive;
  return expectRefusedUntouched(folders, () => restoreHome(input, folders.target, limits), code);
}

describe("restoreHome refuses hostile archives, leaving the target as it was", () => {
  const cases = HOSTILE_ARCHIVES;

  it(`has at least 20 hostile inputs (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
  });

  for (const [name, build, code, limits] of cases) {
    it(name, async () => {
      await expectRefused(await build(), code, limits);
    });
  }

  describe("a sealed archive tampered with after good entries were staged", () => {
    const sealKey = { dataKey: Buffer.alloc(32, 7), storageId: "home-x", revision: 2 };
    async function sealedHome(): Promise<Buffer> {
      const entries = Array.from({ length: 40 }, (_, i) => file(`f${i}`, "y".repeat(5000)));
      const chunks: Buffer[] = [];
      for await (const c of sealCheckpoint(Readable.from([Buffer.concat([...entries, END])]), sealKey))
        chunks.push(c as Buffer);
      return Buffer.concat(chunks);
    }
    const opened = (sealed: Buffer, key = sealKey) => openCheckpoint(Readable.from([sealed]), key);

    it("a flipped bit in the last segment", async () => {
      const sealed = await sealedHome();
      sealed[sealed.length - 20] = (sealed[sealed.length - 20] as number) ^ 4;
      await expectRefused(opened(sealed), "CHECKPOINT_CORRUPT");
    });
    it("truncated mid-stream", async () => {
      const sealed = await sealedHome();
      await expectRefused(opened(sealed.subarray(0, sealed.length - 1000)), "CHECKPOINT_CORRUPT");
    });
    it("another revision's object", async () => {
      await expectRefused(opened(await sealedHome(), { ...sealKey, revision: 3 }), "CHECKPOINT_CORRUPT");
    });
  });

  it("does not follow a symlink already in the target: the entry lands in the new home", async () => {
    await symlink(folders.outside, join(folders.target, "link"));
    await restoreHome(Readable.from([Buffer.concat([file("link/secret", "pwned"), END])]), folders.target);
    const restored = await digestTree(folders.target);
    expect(restored.get("link")).toBe("dir");
    expect(await digestTree(folders.outside)).toEqual(new Map([["secret", expect.stringMatching(/^file /)]]));
    const { readFile } = await import("node:fs/promises");
    expect(await readFile(join(folders.outside, "secret"), "utf8")).toBe("do not touch");
  });

  it("accepts a GNU tar archive (gnu format, long names)", async () => {
    const { execFileSync } = await import("node:child_process");
    const source = join(folders.root, "src");
    const long = `${"d".repeat(120)}/${"f".repeat(130)}`;
    await mkdir(join(source, "d".repeat(120)), { recursive: true });
    await writeFile(join(source, long), "long");
    const archive = execFileSync("tar", ["-c", "--format=gnu", "-C", source, "d".repeat(120)]);
    await restoreHome(Readable.from([archive]), folders.target);
    expect((await digestTree(folders.target)).has(long)).toBe(true);
  });

  it("refuses a second restore of one target while the first runs, with CONFLICT, and keeps the first one's home", async () => {
    const slow = async function* () {
      yield file("first.txt", "one");
      await new Promise((resolve) => setTimeout(resolve, 50));
      yield END;
    };
    const first = restoreHome(slow(), folders.target);
    const second = restoreHome(Readable.from([Buffer.concat([file("second.txt", "two"), END])]), folders.target);
    const [a, b] = await Promise.allSettled([first, second]);
    expect(a.status).toBe("fulfilled");
    expect(b).toMatchObject({ status: "rejected", reason: { code: "CONFLICT" } });
    expect(AgentComputerError.is((b as PromiseRejectedResult).reason, "CONFLICT")).toBe(true);
    expect([...(await digestTree(folders.target)).keys()]).toEqual(["first.txt"]);
    await restoreHome(Readable.from([Buffer.concat([file("third.txt", "three"), END])]), folders.target);
    expect([...(await digestTree(folders.target)).keys()]).toEqual(["third.txt"]);
  });
});
