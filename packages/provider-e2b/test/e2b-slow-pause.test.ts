import type { Machine } from "@agent-computer/core";
import { afterAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// A pause is a blocking memory snapshot, seconds per GB: with a request
// timeout shorter than the pause, the call fails while the pause goes on
// at the service. stop follows the sandbox's state instead of failing.
const PAUSE_MS = 4_000;
const env = await e2bTestEnvironment("e2b: a pause longer than a request", "e2b", { pauseMs: PAUSE_MS });
if (!env.missing) {
  const { emulator } = env;
  const provider = env.provider();
  // Requests of 1.5 s: shorter than the pause.
  const impatient = env.provider({ requestTimeoutMs: 1_500, controlPlaneDeadlineMs: 2_000 });
  const owned: Machine[] = [];

  describe("e2b: a pause longer than a request", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("stop succeeds once the sandbox says paused, though the pause call itself timed out", async () => {
      const machine = await provider.provision({ computerId: "slow-pause", homeKey: `slow-pause-${Date.now()}` });
      owned.push(machine);
      const handle = (await impatient.reconnect(machine.ref)) as Machine;
      // The call times out at 1.5 s; stop follows the state (the service answers paused once the snapshot is under way).
      await handle.stop();
      await expect
        .poll(() => emulator.sandbox(machine.ref.slice("e2b:".length))?.state, { timeout: PAUSE_MS + 5_000 })
        .toBe("paused");
      // The paused sandbox comes back with its memory on reconnect.
      const again = (await provider.reconnect(machine.ref)) as Machine;
      expect((await again.exec({ argv: ["true"] })).exitCode).toBe(0);
    }, 90_000);
  });
}
