import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LeaseEngine } from "@agent-computer/leases";
import { afterEach, describe, expect, it, vi } from "vitest";
import { compiledScript } from "../../../test/support/compiled-script.js";
import { SqliteStateStore } from "../src/sqlite-state-store.js";

const freshFile = () => join(mkdtempSync(join(tmpdir(), "sqlite-faults-")), "state.db");

describe("sqlite state store faults", () => {
  afterEach(() => vi.restoreAllMocks());

  it("a writer killed mid-transaction applies nothing and leaves no lock behind", async () => {
    const file = freshFile();
    const store = SqliteStateStore.open({ path: file });
    expect(
      await store.commit(
        [
          { key: "pair/a", version: null },
          { key: "pair/b", version: null },
        ],
        [
          { key: "pair/a", version: 1, value: { side: "a" } },
          { key: "pair/b", version: 1, value: { side: "b" } },
        ],
      ),
    ).toBe(true);

    // node itself (the writer compiled to plain JS), no wrapper: SIGKILL must hit the writer.
    const script = await compiledScript(fileURLToPath(new URL("./killed-writer.ts", import.meta.url)));
    const child = spawn(process.execPath, [script, file], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("mid-transaction") && resolve());
      child.on("exit", () => reject(new Error("the writer exited before its transaction began")));
    });
    // While it holds the write lock, a commit waits, then gives UNAVAILABLE: never a false result.
    const blocked = SqliteStateStore.open({ path: file, busyTimeoutMs: 200 });
    await expect(
      blocked.commit([{ key: "pair/b", version: 1 }], [{ key: "pair/b", version: 2, value: { side: "b2" } }]),
    ).rejects.toMatchObject({ code: "UNAVAILABLE", retryable: true });
    child.kill("SIGKILL");
    await new Promise((resolve) => child.on("exit", resolve));

    const after = SqliteStateStore.open({ path: file });
    const records = await after.read(["pair/a", "pair/b"]);
    expect(records.get("pair/a")).toEqual({ key: "pair/a", version: 1, value: { side: "a" } });
    expect(records.get("pair/b")?.version).toBe(1);
    expect(
      await after.commit(
        [
          { key: "pair/a", version: 1 },
          { key: "pair/b", version: 1 },
        ],
        [
          { key: "pair/a", version: 2, value: { side: "a2" } },
          { key: "pair/b", version: 2, value: { side: "b2" } },
        ],
      ),
    ).toBe(true);
    for (const s of [store, blocked, after]) s.close();
  }, 30_000);

  it("a client whose wall clock is skewed by minutes cannot act after its lease expired by the store's clock", async () => {
    const engine = new LeaseEngine(SqliteStateStore.open({ path: freshFile() }));
    await engine.createComputer({ computerId: "skewed", providerKind: "fake", homeKey: "skewed", storageId: "skewed" });
    const realNow = Date.now;
    vi.spyOn(Date, "now").mockImplementation(() => realNow() - 10 * 60_000);
    const lease = await engine.acquireCheckpoint({ computerId: "skewed", holder: "late-worker", ttlMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await expect(engine.renew(lease)).rejects.toMatchObject({ code: "LEASE_LOST" });
    await expect(
      engine.commitRevision({ computerId: "skewed", lease, expectedRevision: 0, next: 1 }),
    ).rejects.toMatchObject({ code: "LEASE_LOST" });
    expect((await engine.getComputer("skewed"))?.revision).toBe(0);
  });
});
