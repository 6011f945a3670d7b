import type { Machine } from "@agent-computer/core";
import { afterAll, describe, expect, it } from "vitest";
import { kubernetesTestEnvironment } from "./kubernetes-test-environment.js";

const env = await kubernetesTestEnvironment("kubernetes home round trip");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const MIB = 1024 * 1024;

/**
 * Writes a 200 MiB home of mixed files inside the pod (two large, sixty
 * medium, thousands of small, some with awkward names, empty folders), so
 * the test spends its time on the transfer, not on uploading the fixture.
 */
const MAKE_MIXED_HOME = `
import os, random
random.seed(16)
total = 200 * 1024 * 1024
left = total
def put(rel, size):
    global left
    os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
    with open(rel, "wb") as f:
        f.write(os.urandom(size))
    left -= size
for i in range(2):
    put(f"large/blob-{i}.bin", 50 * 1024 * 1024)
for i in range(60):
    put(f"medium/{i % 6}/file-{i}.dat", 1024 * 1024)
names = ["with space", "ünïcödé 文件", "-dash", "new\\nline", "tab\\there", "$(echo x)"]
i = 0
while left > 0:
    put(f"small/{i % 40}/{names[i % len(names)]}-{i}.txt", min(left, 1024 + (i * 7919) % 30000))
    i += 1
for d in ["empty/a", "empty/b/c"]:
    os.makedirs(d, exist_ok=True)
os.chmod("small/0", 0o750)
`;

/** Every folder (with its mode) and file (with its SHA-256) of the home, computed inside the pod. */
async function homeDigest(m: Machine): Promise<string> {
  const r = await m.exec({
    shell:
      "find . -mindepth 1 -type d -printf 'd %m %P\\0' | LC_ALL=C sort -z | tr '\\0' '\\n'; find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum; find . -type f | wc -l; du -sb --apparent-size . | cut -f1",
    maxOutputBytes: 16 * MIB,
    timeoutMs: 120_000,
  });
  expect(r.exitCode).toBe(0);
  return text(r.stdout);
}

if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  afterAll(async () => {
    for (const m of owned) await m.destroy().catch(() => {});
  });

  describe("kubernetes home round trip", () => {
    it("a 200 MiB home of mixed files round-trips byte-identical through pods/exec", async () => {
      const source = await provider.provision({ computerId: "round-trip-src", homeKey: `rt-src-${Date.now()}` });
      owned.push(source);
      const made = await source.exec({ argv: ["python3", "-c", MAKE_MIXED_HOME], timeoutMs: 120_000 });
      expect(text(made.stderr)).toBe("");
      const expected = await homeDigest(source);
      expect(expected).toContain("\n");

      const target = await provider.provision({ computerId: "round-trip-dst", homeKey: `rt-dst-${Date.now()}` });
      owned.push(target);
      await target.files.write("old/replaced.txt", new TextEncoder().encode("the import replaces the home whole"));
      const started = performance.now();
      await target.files.importWorkspace(await source.files.exportWorkspace());
      const seconds = (performance.now() - started) / 1000;
      expect(await homeDigest(target)).toBe(expected);
      await expect(target.files.read("old/replaced.txt")).rejects.toMatchObject({ code: "NOT_FOUND" });
      console.log(
        `200 MiB export+import through pods/exec: ${seconds.toFixed(1)} s (${(200 / seconds).toFixed(0)} MiB/s)`,
      );
    }, 300_000);
  });
}
