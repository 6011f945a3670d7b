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
import { boxdTestEnvironment, TEST_ORG } from "./boxd-test-environment.js";

// The runtime on boxd, through the package's gRPC client and the emulator:
// two bots with their own desktops and cookies (their desktop calls ride
// the machine's public URL to the screen gateway, guarded by its tokens);
// stop suspends and reconnect resumes the same machine with its memory,
// home and both profiles; a machine destroyed behind the provider's back
// is replaced and its home restored.
const env = await boxdTestEnvironment("boxd: the runtime");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const nameOf = (m: Machine) => m.ref.slice("boxd:".length);
  let machine: Machine;

  describe("boxd: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("gives two bots on one Team computer their own desktops and cookies, through the public URL", async () => {
      machine = await provider.provision({ computerId: "two-bots", homeKey: `two-bots-${Date.now()}` });
      owned.push(machine);
      await expectBotsKeepTheirOwnCookies(machine);
    }, 150_000);

    it("stop suspends; reconnect resumes the same machine, with the home and both profiles", async () => {
      const bytes = new Uint8Array(50_000).map((_, i) => (i * 13) % 256);
      await machine.files.write("notes/kept.bin", bytes);
      const before = env.emulator.vms.find(TEST_ORG, nameOf(machine))?.containerId;
      await machine.stop();
      expect(env.emulator.vms.find(TEST_ORG, nameOf(machine))?.status).toBe("suspended");
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restored = again as Machine;
      owned.push(restored);
      expect(restored.ref).toBe(machine.ref);
      expect(env.emulator.vms.find(TEST_ORG, nameOf(machine))?.status).toBe("running");
      // Suspend keeps the machine itself: the same container, thawed.
      expect(env.emulator.vms.find(TEST_ORG, nameOf(machine))?.containerId).toBe(before);
      expect(await restored.files.read("notes/kept.bin")).toEqual(bytes);
      await expectBotsStillLoggedIn(restored);
    }, 180_000);

    it("replaces a machine destroyed behind the provider's back, with the home restored from the checkpoint", async () => {
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
          await env.emulator.destroyBehindTheProvider(TEST_ORG, nameOf(lost));
          expect(await provider.reconnect(lost.ref)).toBe("gone");
        },
      });
    }, 150_000);
  });
}
