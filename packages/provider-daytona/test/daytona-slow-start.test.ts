import { type Machine, opContext } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// A start slower than the server's own 30 s wait (Daytona PR #2204): the
// emulator's start call waits 30 s and answers 504, the sandbox comes up
// a second later. The caller's deadline decides, not the server's wait or
// the SDK's.
const env = await daytonaTestEnvironment("daytona: a slow start");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine | undefined;

  describe("daytona: a slow start", () => {
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    }, 60_000);

    it("a start slower than 30 s completes within the caller's deadline; a shorter deadline is TIMEOUT, not gone", async () => {
      machine = await provider.provision({ computerId: "slow", homeKey: `slow-${Date.now()}` });
      await machine.files.write("slow.txt", new TextEncoder().encode("still here"));
      await machine.stop();
      env.emulator.startDelayMs = 31_000;
      env.emulator.startAnswerWaitMs = 30_000;

      const began = Date.now();
      const again = await provider.reconnect(machine.ref, opContext({ timeoutMs: 90_000 }));
      expect(again).not.toBe("gone");
      expect(Date.now() - began).toBeGreaterThan(30_000);
      // The server's own wait gave up (504) and the provider kept waiting.
      const id = machine.ref.slice("daytona:".length);
      expect(env.emulator.refusals).toContain(`504 POST /api/sandbox/${id}/start`);
      expect(Buffer.from(await (again as Machine).files.read("slow.txt")).toString()).toBe("still here");

      // A caller whose deadline is shorter than the start gets TIMEOUT: an error to retry, not "gone".
      await (again as Machine).stop();
      env.emulator.startDelayMs = 5_000;
      env.emulator.startAnswerWaitMs = 0;
      const short = await failureOf(provider.reconnect(machine.ref, opContext({ timeoutMs: 1_500 })));
      expect(short).toMatchObject({ code: "TIMEOUT" });
      expect(env.emulator.stateOf(id)).toBe("starting");
    }, 120_000);
  });
}
