import { existsSync } from "node:fs";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import {
  expectBotsKeepTheirOwnCookies,
  expectBotsStillLoggedIn,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { hostProvider } from "../src/host-provider.js";
import { hostTestEnvironment } from "./host-test-environment.js";

// The runtime on host computers with a private display per bot: two bots
// with their own desktops and Chrome profiles under the home; a checkpoint,
// and a restore of it into a new home folder (another homes folder, as a
// second app or a new machine would have); a run longer than the active
// cap is not stopped, and no run record is written.
const env = await hostTestEnvironment("host computers: the runtime", "private");
if (!env.missing) {
  describe("host computers: the runtime", () => {
    // Each machine by its provider: a run's machine is fenced, and refuses (destroy too) once the run ended.
    const owned: { provider: SandboxProvider; machine: Machine }[] = [];
    const stateStore = new MemoryStateStore();
    let homeStore: LocalAgentHomeStore;
    const runtimeOn = (provider: SandboxProvider, options: { maxActiveMs?: number; idleMs?: number } = {}) =>
      createComputerRuntime({ provider, stateStore, homeStore, deployment: "host-runtime-test", ...options });

    afterAll(async () => {
      for (const { provider, machine } of owned) {
        const again = await provider.reconnect(machine.ref);
        if (again !== "gone") await again.destroy();
      }
    }, 60_000);

    it("two bots get their own desktops and Chrome profiles; a checkpoint restores into a new home folder", async () => {
      homeStore = new LocalAgentHomeStore({ dataDir: await temporaryDataDir("host-runtime-store-") });
      const first = hostProvider(await env.options());
      const runtime = runtimeOn(first);
      const run = runtime.startRun({ workspaceId: "two-bots", botId: "alice" });
      const machine = await run.machine();
      owned.push({ provider: first, machine });
      // The run's machine is fenced to its bot: the two bots' desktops through the provider's own handle.
      const unfenced = (await first.reconnect(machine.ref)) as Machine;
      await expectBotsKeepTheirOwnCookies(unfenced);
      for (const bot of ["alice", "bob"]) {
        expect(existsSync(join(machine.workspacePath, ".browser-profiles", bot, "Default"))).toBe(true);
      }
      await machine.files.write("shared/notes.txt", new TextEncoder().encode("written before the checkpoint"));
      await run.end("completed"); // the run's end is a checkpoint boundary
      expect((await homeStore.latest("team-two-bots"))?.revision).toBeGreaterThan(0);

      // Another app (a provider on other folders) finds no machine behind the record:
      // it provisions one in its own homes folder and restores the checkpoint into it.
      const second = hostProvider(await env.options());
      const again = runtimeOn(second).startRun({ workspaceId: "two-bots", botId: "bob" });
      const restored = await again.machine();
      owned.push({ provider: second, machine: restored });
      expect(restored.workspacePath).not.toBe(machine.workspacePath);
      expect(new TextDecoder().decode(await restored.files.read("shared/notes.txt"))).toBe(
        "written before the checkpoint",
      );
      await again.end("completed");
      await expectBotsStillLoggedIn((await second.reconnect(restored.ref)) as Machine);
    }, 240_000);

    it("a run longer than the active cap is not stopped, and no run record is written", async () => {
      const cap = { maxActiveMs: 1500, idleMs: 60_000 };
      const provider = hostProvider(await env.options());
      const host = runtimeOn(provider, cap);
      const run = host.startRun({ workspaceId: "long-run", botId: "alpha" });
      const machine = await run.machine();
      owned.push({ provider, machine });
      const r = await machine.exec({ shell: "sleep 2; echo still-here" });
      expect(Buffer.from(r.stdout).toString()).toBe("still-here\n");
      expect(await host.suspendIdle()).toEqual([]);
      await run.end("completed");
      // Up past the cap, used a moment ago: a provider that bills would be suspended now (below).
      expect(await host.suspendIdle()).toEqual([]);
      // Still running: the provider lists it so and its commands run.
      expect(await provider.list({ labels: {}, running: true })).toEqual([machine.ref]);
      await expect(
        ((await provider.reconnect(machine.ref)) as Machine).exec({ argv: ["true"] }),
      ).resolves.toMatchObject({
        exitCode: 0,
      });
      expect((await host.runRecords.list(0)).records).toEqual([]);
      expect((await host.leases.getComputer("team-long-run"))?.runs).toHaveLength(1);

      // The same, on a provider that bills while running: suspended at the cap, and recorded.
      const billing = runtimeOn(createFakeProvider({ capabilities: { billsWhileRunning: true } }), cap);
      const billed = billing.startRun({ workspaceId: "long-run-billed", botId: "alpha" });
      await (await billed.machine()).exec({ shell: "sleep 2" });
      await billed.end("completed");
      expect(await billing.suspendIdle()).toEqual(["team-long-run-billed"]);
      const [record] = (await billing.runRecords.list(0)).records;
      expect(record).toMatchObject({ computerId: "team-long-run-billed", endReason: "active_limit" });
    }, 120_000);
  });
}
