import type { Machine } from "@agent-computer/core";
import { expectBotsKeepTheirOwnCookies, expectBotsStillLoggedIn } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { railwayTestEnvironment } from "./railway-test-environment.js";

// Stop stops the deployment: its container (memory, the container's own
// disk) goes, the volume stays. Reconnect deploys again, on a new
// container with the same volume: the home and both bots' browser
// profiles are there; what lived outside the volume is not.
const env = await railwayTestEnvironment("railway: stop and start");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("railway:".length);

  describe("railway: stop and start", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("after stop and start the home and both bots' browser profiles are there; the container's own disk is not", async () => {
      const machine = await provider.provision({ computerId: "kept", homeKey: `kept-${Date.now()}` });
      owned.push(machine);
      await expectBotsKeepTheirOwnCookies(machine);
      const bytes = new Uint8Array(50_000).map((_, i) => (i * 13) % 256);
      await machine.files.write("notes/kept.bin", bytes);
      await machine.exec({ shell: "echo gone > /tmp/outside-the-volume" });
      const before = env.emulator.containerOf(idOf(machine));
      await machine.stop();
      expect(env.emulator.containerOf(idOf(machine))).toBeUndefined();
      expect(await provider.list({ labels: {}, running: true })).not.toContain(machine.ref);
      expect(await provider.list({ labels: {} })).toContain(machine.ref);
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restored = again as Machine;
      owned.push(restored);
      expect(env.emulator.containerOf(idOf(machine))).not.toBe(before);
      expect(await restored.files.read("notes/kept.bin")).toEqual(bytes);
      expect((await restored.exec({ shell: "cat /tmp/outside-the-volume" })).exitCode).not.toBe(0);
      await expectBotsStillLoggedIn(restored);
    }, 300_000);

    it("destroy deletes the service and its volume; the ref is gone after", async () => {
      const machine = await provider.provision({ computerId: "gone", homeKey: `gone-${Date.now()}` });
      const id = idOf(machine);
      expect([...env.emulator.volumes.values()].some((v) => v.serviceId === id)).toBe(true);
      await machine.destroy();
      expect([...env.emulator.volumes.values()].some((v) => v.serviceId === id)).toBe(false);
      expect(await provider.reconnect(machine.ref)).toBe("gone");
    }, 180_000);
  });
}
