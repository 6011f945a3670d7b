import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { expectLostMachineReplaced, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { railwayTestEnvironment } from "./railway-test-environment.js";

// The runtime on Railway, through the package's client and the emulator:
// a service deleted behind the provider is "gone", and the runtime
// replaces it with the home restored from its checkpoint. (Two bots'
// desktops and cookies on one computer, kept across stop and start, are in
// railway-stop-start.test.ts.)
const env = await railwayTestEnvironment("railway: the runtime");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("railway:".length);

  describe("railway: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("replaces a service deleted behind the provider, with the home restored from the checkpoint", async () => {
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
          await env.emulator.deleteBehindTheProvider(idOf(lost));
          expect(await provider.reconnect(lost.ref)).toBe("gone");
        },
      });
    }, 180_000);
  });
}
