import type { Machine } from "@agent-computer/core";
import { KILL_TREE_LIMIT_MS } from "@agent-computer/core/provider-utils";
import { MemoryStateStore } from "@agent-computer/leases";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { type NovitaProvider, stateStoreQuarantine } from "../src/index.js";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// Novita's rule, through the real novita-sandbox SDK: a command whose kill
// cannot be confirmed pauses and quarantines the computer; reconnect then
// refuses it (never resuming it) until recover ends it.
const env = await e2bTestEnvironment("novita: quarantine", "novita");
if (!env.missing) {
  const { emulator } = env;
  // The quarantine lives in a state store every process shares: a second provider on it refuses too.
  const stateStore = new MemoryStateStore();
  const provider = env.provider({ quarantine: stateStoreQuarantine(stateStore) }) as NovitaProvider;
  const otherWorker = env.provider({ quarantine: stateStoreQuarantine(stateStore) }) as NovitaProvider;
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("novita:".length);

  describe("novita: quarantine", () => {
    afterAll(async () => {
      emulator.clearFaults();
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("speaks Novita's wire: v1 create and connect paths", async () => {
      const machine = await provider.provision({ computerId: "wire", homeKey: `wire-${Date.now()}` });
      owned.push(machine);
      expect(machine.ref).toMatch(/^novita:/);
      await machine.stop();
      await provider.reconnect(machine.ref);
      const paths = emulator.calls.map((c) => `${c.method} ${c.path}`);
      expect(paths).toContain("POST /sandboxes");
      expect(paths).toContain(`POST /sandboxes/${idOf(machine)}/connect`);
      expect(paths).not.toContain("POST /v2/sandboxes");
    }, 60_000);

    it("quarantines a computer whose command could not be confirmed killed, and reconnect refuses until recover", async () => {
      const machine = await provider.provision({ computerId: "q", homeKey: `quarantine-${Date.now()}` });
      owned.push(machine);
      // The stream drops mid-command and the kill's own process cannot start.
      emulator.dropNextStreams(1, 1, { thenFailStarts: 1 });
      const error = await failureOf(machine.exec({ shell: "echo started; sleep 60" }));
      expect(error.code).toBe("CONFLICT");
      expect(error.details).toMatchObject({ quarantined: true });
      expect(error.message).toMatch(/quarantined: .*could not be confirmed killed, and it is paused/);
      expect(emulator.sandbox(idOf(machine))?.state).toBe("paused");

      const connectsBefore = emulator.calls.filter((c) => c.path.endsWith(`/${idOf(machine)}/connect`)).length;
      const refused = await failureOf(provider.reconnect(machine.ref));
      expect(refused.code).toBe("CONFLICT");
      expect(refused.message).toMatch(/quarantined/);
      // Refused without resuming it: no connect reached the service, it stays paused.
      expect(emulator.calls.filter((c) => c.path.endsWith(`/${idOf(machine)}/connect`)).length).toBe(connectsBefore);
      expect(emulator.sandbox(idOf(machine))?.state).toBe("paused");
      expect((await failureOf(machine.exec({ argv: ["true"] }))).code).toBe("CONFLICT");
      // Another process on the same state store (a worker, a job, a restart) refuses it as well.
      expect((await failureOf(otherWorker.reconnect(machine.ref))).code).toBe("CONFLICT");

      await provider.recover(machine.ref);
      expect(emulator.sandbox(idOf(machine))).toBeUndefined();
      // Gone now: the runtime replaces it from its last checkpoint.
      expect(await provider.reconnect(machine.ref)).toBe("gone");
    }, 60_000);

    it("quarantines a computer whose timed-out command's stream went silent and whose kill failed", async () => {
      const machine = await provider.provision({ computerId: "q-silent", homeKey: `quarantine-silent-${Date.now()}` });
      owned.push(machine);
      emulator.silenceNextStreams(1, { thenFailStarts: 1 });
      const started = performance.now();
      const error = await failureOf(machine.exec({ shell: "sleep 60", timeoutMs: 2_000 }));
      // Before, it waited for the silent stream until the SDK's own deadline.
      expect(performance.now() - started).toBeLessThan(2_000 + KILL_TREE_LIMIT_MS + 5_000);
      expect(error.code).toBe("CONFLICT");
      expect(error.message).toMatch(/quarantined: .*could not be confirmed killed, and it is paused/);
      expect(emulator.sandbox(idOf(machine))?.state).toBe("paused");
      await provider.recover(machine.ref);
    }, 40_000);

    it("pauses a quarantined computer although the service fails the first pause (hunt 7: a loaded engine's freeze failed)", async () => {
      const machine = await provider.provision({ computerId: "q3", homeKey: `quarantine-pause-${Date.now()}` });
      owned.push(machine);
      emulator.injectControlPlaneFault({ status: 500, count: 1, path: /\/pause$/ });
      emulator.dropNextStreams(1, 1, { thenFailStarts: 1 });
      const error = await failureOf(machine.exec({ shell: "echo started; sleep 60" }));
      expect(error.details).toMatchObject({ quarantined: true });
      expect(emulator.sandbox(idOf(machine))?.state).toBe("paused");
      expect(emulator.calls.filter((c) => c.path.endsWith(`/${idOf(machine)}/pause`)).length).toBe(2);
      await provider.recover(machine.ref);
    }, 60_000);

    it("says a quarantined computer may still run when every pause fails, and refuses it all the same", async () => {
      const machine = await provider.provision({ computerId: "q4", homeKey: `quarantine-nopause-${Date.now()}` });
      owned.push(machine);
      emulator.injectControlPlaneFault({ status: 500, path: /\/pause$/ });
      emulator.dropNextStreams(1, 1, { thenFailStarts: 1 });
      try {
        const error = await failureOf(machine.exec({ shell: "echo started; sleep 60" }));
        expect(error.message).toMatch(/its pause failed .*: it may still be running/);
        expect(emulator.sandbox(idOf(machine))?.state).toBe("running");
        expect((await failureOf(provider.reconnect(machine.ref))).code).toBe("CONFLICT");
      } finally {
        emulator.clearFaults();
      }
      await provider.recover(machine.ref);
      expect(emulator.sandbox(idOf(machine))).toBeUndefined();
    }, 90_000);

    it("quarantines a computer whose stream was cut before the command's start came and whose kill failed", async () => {
      // envd may have started it: unconfirmed is unconfirmed, pid known or not.
      const machine = await provider.provision({ computerId: "q2", homeKey: `quarantine-start-${Date.now()}` });
      owned.push(machine);
      emulator.dropNextStreams(1, 0, { thenFailStarts: 1 });
      const error = await failureOf(machine.exec({ shell: "sleep 60" }));
      expect(error.code).toBe("CONFLICT");
      expect(error.details).toMatchObject({ quarantined: true });
      expect(emulator.sandbox(idOf(machine))?.state).toBe("paused");
      await provider.recover(machine.ref);
      expect(emulator.sandbox(idOf(machine))).toBeUndefined();
    }, 60_000);
  });
}
