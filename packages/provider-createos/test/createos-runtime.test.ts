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
import { createosTestEnvironment } from "./createos-test-environment.js";

// The runtime on CreateOS, through the official SDK and the emulator: two
// bots with their own desktops and cookies (their calls ride the public
// ingress URL, guarded by the gateway's tokens); pause and reconnect keep
// the same VM, its home and both profiles; a sandbox destroyed behind the
// provider's back is replaced and its home restored.
const env = await createosTestEnvironment("createos: the runtime");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("createos:".length);
  let machine: Machine;

  describe("createos: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("gives two bots on one Team computer their own desktops and cookies, through the ingress URL", async () => {
      machine = await provider.provision({ computerId: "two-bots", homeKey: `two-bots-${Date.now()}` });
      owned.push(machine);
      await expectBotsKeepTheirOwnCookies(machine);
    }, 150_000);

    it("stop pauses; reconnect resumes the same VM, with the home and both profiles", async () => {
      const bytes = new Uint8Array(50_000).map((_, i) => (i * 13) % 256);
      await machine.files.write("notes/kept.bin", bytes);
      const before = env.emulator.containerOf(idOf(machine));
      await machine.stop();
      expect(env.emulator.statusOf(idOf(machine))).toBe("paused");
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restored = again as Machine;
      owned.push(restored);
      expect(restored.ref).toBe(machine.ref);
      expect(env.emulator.statusOf(idOf(machine))).toBe("running");
      // Pause keeps the VM itself: the same container, thawed.
      expect(env.emulator.containerOf(idOf(machine))).toBe(before);
      expect(await restored.files.read("notes/kept.bin")).toEqual(bytes);
      await expectBotsStillLoggedIn(restored);
    }, 180_000);

    it("replaces a sandbox destroyed behind the provider's back, with the home restored from the checkpoint", async () => {
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
        lose: async (lost) => {
          await env.emulator.destroyBehindTheProvider(idOf(lost));
          expect(await provider.reconnect(lost.ref)).toBe("gone");
        },
      });
    }, 150_000);
  });
}
