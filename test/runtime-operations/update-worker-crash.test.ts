import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import type { StateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { compiledScript } from "../support/compiled-script.js";

// A worker process killed with SIGKILL in the middle of an update: its
// operation turns interrupted after the heartbeat timeout (an injected store
// clock jumps past it), the computer stays reserved until the owner
// releases it asserting the workers stopped, and recovery then succeeds.

const child = await compiledScript(fileURLToPath(new URL("./update-worker-child.ts", import.meta.url)));
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/** Runs the child until it hangs in provisioning and has heartbeated, then kills it; resolves the operation id. */
function killMidUpdate(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    let killing = false;
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (!killing && out.includes("provisioning\n") && /operation (\S+)\n/.test(out)) {
        killing = true;
        // Let a few heartbeats land first, so the timeout really runs from the last one.
        setTimeout(() => proc.kill("SIGKILL"), 400);
      }
    });
    proc.on("error", reject);
    proc.on("exit", (_code, signal) => {
      const id = /operation (\S+)\n/.exec(out)?.[1];
      if (signal === "SIGKILL" && id) resolve(id);
      else reject(new Error(`the worker child exited on its own (${signal ?? _code}): ${out}`));
    });
  });
}

describe("worker killed mid-update", () => {
  it("leaves the operation interrupted and the computer reserved until its owner releases it; recovery then succeeds", async () => {
    const base = mkdtempSync(join(tmpdir(), "update-worker-crash-"));
    const [root, dataDir, stateFile] = [join(base, "machines"), join(base, "data"), join(base, "state.db")];
    const sqlite = SqliteStateStore.open({ path: stateFile });
    // The injected clock: this process sees the shared store's time plus `skew`.
    let skew = 0;
    const stateStore: StateStore = {
      read: (keys) => sqlite.read(keys),
      commit: (expect, write) => sqlite.commit(expect, write),
      now: async () => (await sqlite.now()) + skew,
    };
    const provider = createFakeProvider({ root });
    const runtime = createComputerRuntime({
      provider,
      stateStore,
      homeStore: new LocalAgentHomeStore({ dataDir }),
      idleMs: 0,
      deployment: "worker-crash",
    });
    const run = runtime.startRun({ workspaceId: "crash", botId: "alpha" });
    const machine = await run.machine();
    await machine.files.write("bots/alpha/saved.txt", new TextEncoder().encode("saved"));
    await run.end("completed");
    const computerId = "team-crash";
    const before = await runtime.leases.getComputer(computerId);
    const live = (await provider.reconnect(before?.providerRef as ProviderRef)) as Machine;
    await live.files.write("bots/alpha/live.txt", new TextEncoder().encode("live work"));

    const id = await killMidUpdate([root, dataDir, stateFile, computerId]);
    const stuck = await runtime.operations.get(id);
    expect(stuck).toMatchObject({ status: "running", worker: "child-worker" });
    expect(stuck?.stages.map((s) => `${s.name}:${s.status}`)).toEqual(["checkpointing:done", "provisioning:running"]);
    expect(stuck?.heartbeatAt).toBeGreaterThan(stuck?.startedAt as number);
    // Within the timeout, a dead worker is indistinguishable from a slow one: no release.
    await expect(
      runtime.operations.releaseInterrupted({ id, owner: "owner-1", workersStopped: true }),
    ).rejects.toMatchObject({ code: "LEASE_HELD" });

    skew = 10 * 60_000 + 1000;
    expect((await runtime.operations.get(id))?.status).toBe("interrupted");
    const blocked = runtime.startRun({ workspaceId: "crash", botId: "alpha" });
    await expect(blocked.machine()).rejects.toMatchObject({ code: "LEASE_HELD" });
    await blocked.end("failed");
    await expect(runtime.takeover({ computerId, botId: "alpha", holder: "person", ttlMs: 5000 })).rejects.toMatchObject(
      { code: "LEASE_HELD" },
    );
    await expect(runtime.operations.requestRecovery({ computerId, owner: "owner-1" })).rejects.toMatchObject({
      code: "LEASE_HELD",
    });
    await expect(runtime.stopComputer(computerId)).rejects.toMatchObject({ code: "LEASE_HELD" });
    await expect(runtime.operations.releaseInterrupted({ id, owner: "owner-1" } as never)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    await expect(
      runtime.operations.releaseInterrupted({ id, owner: "owner-2", workersStopped: true }),
    ).rejects.toMatchObject({ code: "LEASE_HELD" });
    expect((await runtime.leases.getReservation(computerId))?.status).toBe("interrupted");

    await runtime.operations.releaseInterrupted({ id, owner: "owner-1", workersStopped: true });
    expect(await runtime.leases.getReservation(computerId)).toBeUndefined();
    const recovery = await runtime.operations.waitFor(
      (await runtime.operations.requestRecovery({ computerId, owner: "owner-1" })).id,
      { timeoutMs: 60_000 },
    );
    expect(recovery.status).toBe("succeeded");
    const after = await runtime.leases.getComputer(computerId);
    expect(after?.providerRef).not.toBe(before?.providerRef);
    const replacement = (await provider.reconnect(after?.providerRef as ProviderRef)) as Machine;
    expect(text(await replacement.files.read("bots/alpha/saved.txt"))).toBe("saved");
    // The killed update had saved the live work before it hung.
    expect(text(await replacement.files.read("bots/alpha/live.txt"))).toBe("live work");
    expect(await runtime.operations.get(id)).toMatchObject({ status: "interrupted", released: { by: "owner-1" } });
    sqlite.close();
  }, 120_000);
});
