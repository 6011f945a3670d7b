import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { COMPUTER_LABELS } from "@agent-computer/core";
import { type ComputerOperation, type ComputerRuntime, createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { databaseAnswers, workerDatabaseUrl } from "../../packages/state-store-postgres/test/test-database.js";
import { compiledScript } from "../support/compiled-script.js";
import { openPausedWorkerStore, type PausedWorkerStore } from "./paused-worker-store.js";

// A worker PROCESS is paused (it stops itself with SIGSTOP) while its update's provisioning call
// hangs, and ten minutes pass on the shared store's clock: the operation
// reads interrupted, the reconciler stores that, and the computer stays
// reserved, also after the worker resumes, while its call still hangs. When
// the call returns, the worker (not the parent, not an operator) marks the
// operation settled and frees the computer: recovery is then available
// without releaseInterrupted. On SQLite and on PostgreSQL.

const child = await compiledScript(fileURLToPath(new URL("./paused-worker-child.ts", import.meta.url)));
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const TEN_MINUTES_AND_MORE = 10 * 60_000 + 1000;

interface PausableWorker {
  readonly proc: ChildProcess;
  /** The id of the update it took. */
  readonly id: string;
  /** Resolves once the process has stopped itself (SIGSTOP) between two store calls. */
  pause(): Promise<void>;
}

/** Starts the worker child; resolves once its update hangs in provisioning. */
function startPausableWorker(config: object): Promise<PausableWorker> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, JSON.stringify(config)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    const listeners = new Set<() => void>();
    proc.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      for (const listener of listeners) listener();
      const id = /operation (\S+)\n/.exec(out)?.[1];
      if (id && out.includes("provisioning\n")) resolve({ proc, id, pause });
    });
    const pause = () =>
      new Promise<void>((paused) => {
        const check = () => {
          if (!out.includes("paused\n")) return;
          listeners.delete(check);
          paused();
        };
        listeners.add(check);
        proc.kill("SIGUSR2");
      });
    proc.on("error", reject);
    proc.on("exit", (code, signal) => reject(new Error(`the worker child exited (${signal ?? code}): ${out}`)));
  });
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const stores: [PausedWorkerStore["kind"], (base: string) => Promise<string | undefined>][] = [
  ["sqlite", async (base) => join(base, "state.db")],
  ["postgres", async () => ((await databaseAnswers()) ? await workerDatabaseUrl() : undefined)],
];

describe.each(stores)("a paused worker's interrupted update on %s", (kind, locate) => {
  it("stays reserved until the worker's provider call settles; then recovery is available without a release", async (context) => {
    const base = mkdtempSync(join(tmpdir(), "paused-worker-"));
    const location = await locate(base);
    if (!location) return context.skip("no PostgreSQL answers at the test URL; run .ci/postgres-setup.sh");
    const spec: PausedWorkerStore = { kind, location, skewFile: join(base, "skew") };
    writeFileSync(spec.skewFile, "0");
    const [root, dataDir, answerFile] = [join(base, "machines"), join(base, "data"), join(base, "answer")];
    // Its own names: the PostgreSQL database outlives the run.
    const deployment = `paused-${randomUUID().slice(0, 8)}`;
    const workspaceId = `ws-${randomUUID().slice(0, 8)}`;
    const { store, close } = await openPausedWorkerStore(spec);
    const provider = createFakeProvider({ root });
    const runtime = createComputerRuntime({
      provider,
      stateStore: store,
      homeStore: new LocalAgentHomeStore({ dataDir }),
      idleMs: 0,
      deployment,
    });
    const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
    const run = runtime.startRun({ workspaceId, botId: "alpha" });
    await (await run.machine()).files.write("bots/alpha/saved.txt", new TextEncoder().encode("saved"));
    await run.end("completed");
    const before = await runtime.leases.getComputer(computerId);
    const live = (await provider.reconnect(before?.providerRef as ProviderRef)) as Machine;
    await live.files.write("bots/alpha/live.txt", new TextEncoder().encode("live work"));

    const worker = await startPausableWorker({ ...spec, root, dataDir, answerFile, computerId, deployment });
    const { proc, id } = worker;
    try {
      await until(async () => {
        const op = await runtime.operations.get(id);
        return (op?.heartbeatAt ?? 0) > (op?.startedAt ?? Number.POSITIVE_INFINITY) ? true : undefined;
      }, "a heartbeat of the worker");
      await worker.pause();
      writeFileSync(spec.skewFile, String(TEN_MINUTES_AND_MORE));
      expect((await runtime.operations.get(id))?.status).toBe("interrupted");
      expect((await runtime.reconcile()).interrupted).toEqual([id]);
      await expectStillReserved(runtime, computerId, workspaceId);

      // Resumed, the worker finds its claim lost; its call still hangs, so the computer stays reserved.
      proc.kill("SIGCONT");
      await runtime.reconcile();
      await expectStillReserved(runtime, computerId, workspaceId);
      expect((await runtime.operations.get(id))?.settled).toBeUndefined();

      writeFileSync(answerFile, "answer");
      const settled = await until(async () => {
        const op = await runtime.operations.get(id);
        return op?.settled ? op : undefined;
      }, "the worker's settled mark");
      expect(settled).toMatchObject({ status: "interrupted", worker: "paused-worker" });
      expect(settled.released).toBeUndefined();
      expect(stageNames(settled)).toEqual(["checkpointing:done", "provisioning:failed"]);
      await until(async () => ((await runtime.leases.getReservation(computerId)) ? undefined : true), "the release");
      expect(await runtime.operations.canRecover(computerId)).toBe(true);
      // The machine the late call made was removed by the worker: only the old one is left.
      const labels = { [COMPUTER_LABELS.computerId]: computerId };
      expect(await provider.list({ labels })).toEqual([before?.providerRef]);

      const recovery = await runtime.operations.waitFor(
        (await runtime.operations.requestRecovery({ computerId, owner: "owner-1" })).id,
        { timeoutMs: 60_000 },
      );
      expect(recovery.status).toBe("succeeded");
      const after = await runtime.leases.getComputer(computerId);
      expect(after?.providerRef).not.toBe(before?.providerRef);
      const replacement = (await provider.reconnect(after?.providerRef as ProviderRef)) as Machine;
      expect(text(await replacement.files.read("bots/alpha/saved.txt"))).toBe("saved");
      // The update saved the live work before its call hung.
      expect(text(await replacement.files.read("bots/alpha/live.txt"))).toBe("live work");
    } finally {
      proc.kill("SIGCONT");
      proc.kill("SIGKILL");
      runtime.operations.close();
      await close();
    }
  }, 120_000);
});

const stageNames = (op: ComputerOperation) => op.stages.map((s) => `${s.name}:${s.status}`);

/** Everything that needs the computer is refused, and recovery is not available. */
async function expectStillReserved(runtime: ComputerRuntime, computerId: string, workspaceId: string): Promise<void> {
  expect((await runtime.leases.getReservation(computerId))?.status).toBe("interrupted");
  expect(await runtime.operations.canRecover(computerId)).toBe(false);
  await expect(runtime.operations.requestRecovery({ computerId, owner: "owner-1" })).rejects.toMatchObject({
    code: "LEASE_HELD",
  });
  const blocked = runtime.startRun({ workspaceId, botId: "alpha" });
  await expect(blocked.machine()).rejects.toMatchObject({ code: "LEASE_HELD" });
  await blocked.end("failed");
}
