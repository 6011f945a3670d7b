import { AgentComputerError, type Machine } from "@agent-computer/core";
import { text } from "@agent-computer/provider-kit";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { createosTestEnvironment, TEST_API_KEY } from "./createos-test-environment.js";

// The service's failures at bad moments: a refused key is an error and
// never "gone", and never appears in a message; a command's output stream
// cut mid-way is replayed from the last sequence seen (processes.go
// Connect's `after`); 503 storms on the control plane are retried within
// the deadline; a pause whose answer was lost is confirmed by the
// sandbox's status.
const env = await createosTestEnvironment("createos: failures");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  let machine: Machine;

  describe("createos: failures", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("a refused key is UNAVAILABLE (not gone), and the key is in no message", async () => {
      machine = await provider.provision({ computerId: "failures", homeKey: `failures-${Date.now()}` });
      owned.push(machine);
      const wrongKey = `${TEST_API_KEY}-revoked`;
      const refused = env.provider({ apiKey: wrongKey });
      const provisioned = await failureOf(refused.provision({ computerId: "nope", homeKey: "nope" }));
      expect(AgentComputerError.is(provisioned, "UNAVAILABLE")).toBe(true);
      const reconnected = await failureOf(refused.reconnect(machine.ref));
      expect(AgentComputerError.is(reconnected, "UNAVAILABLE")).toBe(true);
      for (const error of [provisioned, reconnected]) {
        expect(String((error as Error).message)).not.toContain(wrongKey);
        expect(JSON.stringify((error as AgentComputerError).details ?? {})).not.toContain(wrongKey);
      }
    }, 120_000);

    it("opens a cut output stream again from the last sequence seen: the output arrives whole, once", async () => {
      env.emulator.cutNextStreams(3);
      const r = await machine.exec({ shell: "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.2; done; exit 4" });
      expect(r.exitCode).toBe(4);
      expect(env.emulator.pendingStreamCuts).toBe(0);
      expect(Buffer.from(r.stdout).toString("utf8")).toBe("line1\nline2\nline3\nline4\nline5\nline6\n");
    }, 60_000);

    it("rides out a storm of 503s on reads, and a pause whose answer was lost", async () => {
      env.emulator.inject({ method: "GET", path: /^\/v1\/sandboxes\/sb_[0-9a-f]+$/, status: 503, times: 4 });
      env.emulator.inject({ method: "POST", path: /\/pause$/, status: 200, after: true });
      await machine.stop();
      expect(env.emulator.pendingFaults).toBe(0);
      expect(env.emulator.statusOf(machine.ref.slice("createos:".length))).toBe("paused");
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const resumed = again as Machine;
      expect(text((await resumed.exec({ argv: ["echo", "back"] })).stdout).trim()).toBe("back");
    }, 120_000);
  });
}
