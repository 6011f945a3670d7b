import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import {
  expectBotsKeepTheirOwnCookies,
  expectLostMachineReplaced,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// The runtime on E2B, through the real SDK and the emulator: two bots on one
// Team computer, a sandbox lost at the provider, stop and reconnect.
const env = await e2bTestEnvironment("e2b: the runtime");
if (!env.missing) {
  const TIMEOUT_MS = 45 * 60 * 1000;
  const provider = env.provider({ timeoutMs: TIMEOUT_MS });
  const owned: Machine[] = [];
  const provision = async (name: string) => {
    const m = await provider.provision({ computerId: name, homeKey: `${name}-${Date.now()}` });
    owned.push(m);
    return m;
  };
  const idOf = (m: Machine) => m.ref.slice("e2b:".length);
  const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

  describe("e2b: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("gives two bots on one Team computer their own desktops and cookies", async () => {
      await expectBotsKeepTheirOwnCookies(await provision("two-bots"));
    }, 150_000);

    it("replaces a sandbox killed at the provider, with the home restored from the checkpoint", async () => {
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
        // E2B loses the sandbox: the service no longer knows it.
        lose: (lost) => env.emulator.vanish(idOf(lost)),
      });
    }, 150_000);

    it("sets the sandbox's timeout again while a command outlasts a quarter of it", async () => {
      const short = env.provider({ timeoutMs: 4_000 });
      const machine = await short.provision({ computerId: "kept-alive", homeKey: `kept-alive-${Date.now()}` });
      owned.push(machine);
      const before = env.emulator.sandbox(idOf(machine))?.timeouts.length ?? 0;
      expect((await machine.exec({ argv: ["sleep", "3.5"] })).exitCode).toBe(0);
      // Refreshed every second (a quarter of the 4 s timeout) while the command ran, each time with the app's timeout.
      const refreshes = (env.emulator.sandbox(idOf(machine))?.timeouts ?? []).slice(before);
      expect(refreshes.length).toBeGreaterThanOrEqual(2);
      expect(new Set(refreshes)).toEqual(new Set([4]));
      const calls = env.emulator.calls.filter((c) => c.path === `/sandboxes/${idOf(machine)}/timeout`);
      expect(calls.length).toBe(refreshes.length);
    }, 90_000);

    it("stop pauses; reconnect resumes the same sandbox with a process started before the stop, and the app's timeout", async () => {
      const machine = await provision("pause");
      const started = await machine.exec({
        shell: "setsid nohup sleep 1000 >/dev/null 2>&1 < /dev/null & echo $!",
      });
      const pid = text(started.stdout).trim();
      expect(pid).toMatch(/^\d+$/);
      await machine.stop();
      expect(env.emulator.sandbox(idOf(machine))?.state).toBe("paused");
      // A paused sandbox answers no commands: CONFLICT, not gone.
      await expect(machine.exec({ argv: ["true"] })).rejects.toMatchObject({ code: "CONFLICT" });
      const again = (await provider.reconnect(machine.ref)) as Machine;
      expect(again).not.toBe("gone");
      expect(again.ref).toBe(machine.ref);
      expect(env.emulator.sandbox(idOf(machine))?.state).toBe("running");
      expect((await again.exec({ argv: ["kill", "-0", pid] })).exitCode).toBe(0);
      // Every timeout the sandbox was given is the app's: on create and on the connect.
      const timeouts = env.emulator.sandbox(idOf(machine))?.timeouts ?? [];
      expect(timeouts.length).toBeGreaterThanOrEqual(2);
      expect(new Set(timeouts)).toEqual(new Set([TIMEOUT_MS / 1000]));
      const connects = env.emulator.calls.filter((c) => c.path === `/v2/sandboxes/${idOf(machine)}/connect`);
      expect(connects.map((c) => c.body)).toEqual([{ timeout: TIMEOUT_MS / 1000 }]);
    }, 90_000);
  });
}
