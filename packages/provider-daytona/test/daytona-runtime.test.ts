import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import {
  expectBotsKeepTheirOwnCookies,
  expectBotsStillLoggedIn,
  expectLostMachineReplaced,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// The runtime on Daytona, through the real SDK and the emulator: two bots
// with their own desktops and cookies; archive and reconnect keep the home
// and the bots' browser profiles; a sandbox deleted at the provider is
// replaced and its home restored.
const env = await daytonaTestEnvironment("daytona: the runtime");
if (!env.missing) {
  const provider = env.provider({ stopMode: "archive" });
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("daytona:".length);
  let machine: Machine;

  describe("daytona: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("gives two bots on one Team computer their own desktops and cookies", async () => {
      machine = await provider.provision({ computerId: "two-bots", homeKey: `two-bots-${Date.now()}` });
      owned.push(machine);
      await expectBotsKeepTheirOwnCookies(machine);
    }, 150_000);

    it("archive, then reconnect: the same sandbox on a new container, with the home and both bots' profiles", async () => {
      const bytes = new Uint8Array(50_000).map((_, i) => (i * 13) % 256);
      await machine.files.write("notes/kept.bin", bytes);
      const before = env.emulator.containerOf(idOf(machine));
      await machine.stop();
      // Archive commits the container to an image and removes it.
      await expect.poll(() => env.emulator.stateOf(idOf(machine)), { timeout: 60_000 }).toBe("archived");
      expect(env.emulator.containerOf(idOf(machine))).toBeUndefined();
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restored = again as Machine;
      owned.push(restored);
      expect(restored.ref).toBe(machine.ref);
      expect(env.emulator.stateOf(idOf(machine))).toBe("started");
      expect(env.emulator.containerOf(idOf(machine))).not.toBe(before);
      expect(await restored.files.read("notes/kept.bin")).toEqual(bytes);
      await expectBotsStillLoggedIn(restored);
    }, 180_000);

    it("replaces a sandbox deleted at the provider, with the home restored from the checkpoint", async () => {
      const dataDir = await temporaryDataDir();
      const stateStore = new MemoryStateStore();
      const events: string[] = [];
      await expectLostMachineReplaced({
        startRun: (workspaceId, botId) =>
          createComputerRuntime({
            provider,
            stateStore,
            homeStore: new LocalAgentHomeStore({ dataDir }),
            onEvent: (e) => events.push(e.type),
          }).startRun({ workspaceId, botId }),
        events,
        owned,
        // Someone deletes the sandbox in Daytona: the API no longer knows it.
        lose: async (lost) => {
          await env.emulator.deleteBehindTheProvider(idOf(lost));
          expect(await provider.reconnect(lost.ref)).toBe("gone");
        },
      });
    }, 150_000);
  });
}
