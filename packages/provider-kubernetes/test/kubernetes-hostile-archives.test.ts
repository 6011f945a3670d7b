import { Readable } from "node:stream";
import type { Machine } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
// The checkpoint package's own hostile archives, so a pod refuses exactly what a restore refuses.
import { HOSTILE_ARCHIVES } from "../../checkpoint/src/codec/hostile-archives.test-helpers.js";
import { kubernetesTestEnvironment } from "./kubernetes-test-environment.js";

const env = await kubernetesTestEnvironment("kubernetes hostile archives");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/**
 * What lies beside the home, and the home and a folder outside it with
 * content hashes: an import that was refused must leave all of them as
 * they were (no staging folder left next to the home, nothing written
 * outside it).
 */
const SNAPSHOT = `cd "$1/.." && ls -A . | LC_ALL=C sort
find "$1" outside -printf '%y %m %s %p\\n' | LC_ALL=C sort
find "$1" outside -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum; ls -A /tmp | LC_ALL=C sort`;

if (!env.missing) {
  // One pod per set of limits the cases need (a limit case is refused only under its own limit).
  const groups = new Map<string, typeof HOSTILE_ARCHIVES>();
  for (const hostile of HOSTILE_ARCHIVES) {
    const key = JSON.stringify(hostile[3] ?? {});
    groups.set(key, [...(groups.get(key) ?? []), hostile]);
  }
  const owned: Machine[] = [];
  afterAll(async () => {
    for (const m of owned) await m.destroy().catch(() => {});
  });

  describe("kubernetes hostile archives", () => {
    it(`refuses every hostile archive of the checkpoint tests (${HOSTILE_ARCHIVES.length}), home untouched`, async () => {
      expect(HOSTILE_ARCHIVES.length).toBeGreaterThanOrEqual(20);
      let refused = 0;
      for (const [limits, cases] of groups) {
        const provider = env.provider({ restoreLimits: JSON.parse(limits) });
        const m = await provider.provision({ computerId: "hostile", homeKey: `hostile-${Date.now()}` });
        owned.push(m);
        await m.files.write("work/keep.txt", new TextEncoder().encode("previous work"));
        await m.exec({ shell: "mkdir -p ../outside && echo do-not-touch > ../outside/secret" });
        const snapshot = async () =>
          text((await m.exec({ argv: ["sh", "-c", SNAPSHOT, "snapshot", m.workspacePath] })).stdout);
        const before = await snapshot();
        expect(before).toContain("workspace/work/keep.txt");
        for (const [name, build, code] of cases) {
          const error = await failureOf(m.files.importWorkspace(Readable.from([await build()])));
          expect(error.code, `${name}: ${error.message}`).toBe(code);
          expect(await snapshot(), `${name} left the pod changed`).toBe(before);
          refused++;
        }
        expect(text(await m.files.read("work/keep.txt"))).toBe("previous work");
        await m.destroy();
      }
      expect(refused).toBe(HOSTILE_ARCHIVES.length);
    }, 180_000);
  });
}
