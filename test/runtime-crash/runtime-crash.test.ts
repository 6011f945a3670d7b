import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { createComputerRuntime } from "@agent-computer/runtime";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { compiledScript } from "../support/compiled-script.js";
import { generationBytes } from "./generation.js";

// Kill -9 the runtime process at random moments of a checkpoint (packing,
// writing, swapping, committing): the previous revision must stay
// restorable, and what restores is one whole generation, never a torn mix.

const child = await compiledScript(fileURLToPath(new URL("./checkpoint-child.ts", import.meta.url)));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ChildRun {
  writtenAt: number;
  savedAt?: number;
  killed: boolean;
}

function runChild(args: string[], killAfterWrittenMs?: number): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    const result: ChildRun = { writtenAt: 0, killed: false };
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (!result.writtenAt && out.includes("written\n")) {
        result.writtenAt = performance.now();
        if (killAfterWrittenMs !== undefined) {
          setTimeout(() => {
            result.killed = proc.kill("SIGKILL");
          }, killAfterWrittenMs);
        }
      }
      if (out.includes("saved\n")) result.savedAt ??= performance.now();
    });
    proc.on("error", reject);
    proc.on("exit", (code, signal) => {
      if (signal === "SIGKILL" || code === 0) resolve({ ...result, killed: signal === "SIGKILL" });
      else reject(new Error(`checkpoint child exited with ${code}`));
    });
  });
}

describe("runtime killed mid-checkpoint", () => {
  it("leaves the previous revision restorable and never a torn one", async () => {
    const base = mkdtempSync(join(tmpdir(), "runtime-crash-"));
    const [root, dataDir, stateFile] = [join(base, "machines"), join(base, "data"), join(base, "state.db")];
    const args = (generation: number) => [root, dataDir, stateFile, String(generation)];

    const first = await runChild(args(1));
    expect(first.killed).toBe(false);
    // The kills are aimed at a checkpoint that replaces a revision, as every
    // later one does, timed on a second whole run: the first, which makes the
    // store, is slower, and kills spread over its length landed after most
    // later checkpoints had finished (3 of 7 killed on a loaded CI machine).
    const calibration = await runChild(args(1));
    expect(calibration.killed).toBe(false);
    let checkpointMs = (calibration.savedAt as number) - calibration.writtenAt;

    const outcomes: string[] = [];
    let savedRevision = await committedRevision(root, dataDir, stateFile);
    expect(savedRevision).toBeGreaterThanOrEqual(1);
    for (let generation = 2; generation <= 8; generation++) {
      // Spread the kills over the whole checkpoint, from its first moment to past its end; the
      // last generation dies exactly between the commit and the swap, the narrowest window.
      const at = Math.round(((generation - 2) / 5) * checkpointMs * 1.1);
      const run =
        generation === 8 ? await runChild([...args(generation), "after-commit"]) : await runChild(args(generation), at);
      outcomes.push(
        run.killed
          ? `killed at ${generation === 8 ? "the commit" : `${at} ms`}`
          : `finished in ${Math.round((run.savedAt as number) - run.writtenAt)} ms (kill aimed at ${at} ms)`,
      );
      // A run that finished shows how long a checkpoint takes now: aim the rest inside that.
      if (!run.killed && run.savedAt !== undefined) checkpointMs = Math.min(checkpointMs, run.savedAt - run.writtenAt);

      await sleep(1200); // the dead process's leases expire (TTL 1 s)
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const stateStore = SqliteStateStore.open({ path: stateFile });
      const provider = createFakeProvider({ root });
      const runtime = createComputerRuntime({ provider, stateStore, homeStore, leaseTtlMs: 1000, idleMs: 0 });
      const record = await runtime.leases.getComputer("team-crash");
      // The kill may land after the commit: then the record already has this generation.
      const committedNow = (record?.revision ?? 0) > savedRevision;

      // Lose the machine and its home: only the checkpoint remains.
      const stale = (await provider.reconnect(record!.providerRef as `${string}:${string}`)) as Machine;
      await rm(stale.workspacePath, { recursive: true, force: true });
      await stale.destroy();
      const check = runtime.startRun({ workspaceId: "crash", botId: "alpha" });
      const machine = await check.machine();
      // What restores is what the record says was committed: the store finished or dropped the cut-off checkpoint.
      expect((await homeStore.latest("team-crash"))?.revision).toBe(record?.revision);
      const restored = Number(Buffer.from(await machine.files.read("bots/alpha/generation.txt")).toString());
      expect(restored).toBe(committedNow ? generation : generation - 1);
      if (generation === 8) expect(committedNow).toBe(true);
      const data = await machine.files.read("bots/alpha/data.bin", undefined, { maxBytes: 64 * 1024 * 1024 });
      expect(Buffer.compare(Buffer.from(data), Buffer.from(generationBytes(restored)))).toBe(0);
      if (!run.killed) expect(restored).toBe(generation);
      // Write back what restored, so the next generation starts from a known state.
      await machine.files.write("bots/alpha/generation.txt", new TextEncoder().encode(String(generation)));
      await machine.files.write("bots/alpha/data.bin", generationBytes(generation));
      await check.end("completed");
      savedRevision = (await runtime.leases.getComputer("team-crash"))?.revision ?? 0;
      stateStore.close();
    }
    expect(outcomes.filter((o) => o.startsWith("killed")).length, outcomes.join("; ")).toBeGreaterThanOrEqual(5);
  }, 240_000);
});

/** The revision the computer record has committed, read through a runtime of its own as the loop reads it. */
async function committedRevision(root: string, dataDir: string, stateFile: string): Promise<number> {
  const stateStore = SqliteStateStore.open({ path: stateFile });
  try {
    const runtime = createComputerRuntime({
      provider: createFakeProvider({ root }),
      stateStore,
      homeStore: new LocalAgentHomeStore({ dataDir }),
      leaseTtlMs: 1000,
      idleMs: 0,
    });
    return (await runtime.leases.getComputer("team-crash"))?.revision ?? 0;
  } finally {
    stateStore.close();
  }
}
