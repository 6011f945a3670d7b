import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, RfbTestClient, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// E2B's sandbox timeout is absolute: the sandbox pauses at its end unless
// something sets it again (the emulator enforces it, as the service does).
// With a 5 s timeout, work four times longer must not be paused under it:
// a command, an open screen and a person's takeover, each of which calls
// nothing else meanwhile. Without the keep-alive the same command is paused.
const TIMEOUT_MS = 5_000;
const WORK_MS = 20_000;
const env = await e2bTestEnvironment("e2b: work longer than the sandbox timeout");
if (!env.missing) {
  const { emulator } = env;
  const provider = env.provider({ timeoutMs: TIMEOUT_MS });
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice(m.ref.indexOf(":") + 1);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Whether the emulator paused the sandbox at any time since `since` (its state now, and its timeouts say so). */
  const stateOf = (m: Machine) => emulator.sandbox(idOf(m))?.state;

  describe("e2b: work longer than the sandbox timeout", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("a 20 s command finishes on a sandbox whose timeout is 5 s", async () => {
      const machine = await provider.provision({ computerId: "long-command", homeKey: `long-${Date.now()}` });
      owned.push(machine);
      const started = Date.now();
      const r = await machine.exec({ shell: `sleep ${WORK_MS / 1000}; echo finished` });
      expect(Date.now() - started).toBeGreaterThanOrEqual(WORK_MS);
      expect(r.exitCode).toBe(0);
      expect(new TextDecoder().decode(r.stdout)).toBe("finished\n");
      expect(stateOf(machine)).toBe("running");
    }, 90_000);

    it("an open screen keeps the sandbox for 20 s with nothing else calling it", async () => {
      const machine = await provider.provision({ computerId: "long-screen", homeKey: `screen-${Date.now()}` });
      owned.push(machine);
      const desktop = await (machine.openDesktop as NonNullable<Machine["openDesktop"]>)("watcher");
      const viewer = await RfbTestClient.open(await desktop.screenEndpoint("view"));
      try {
        await viewer.handshake();
        await sleep(WORK_MS);
        // The same connection still answers (a frame, or the clipboard the desktop sent meanwhile).
        expect(stateOf(machine)).toBe("running");
        expect([0, 3]).toContain(await viewer.requestUpdate());
      } finally {
        viewer.close();
      }
      await desktop.release();
      // Released: nothing holds it, and the service's timeout takes it as it would.
      await expect.poll(() => stateOf(machine), { timeout: TIMEOUT_MS * 3, interval: 200 }).toBe("paused");
    }, 90_000);

    it("a person's 20 s takeover keeps the sandbox, and the bot's run goes on after it", async () => {
      const runtime = createComputerRuntime({
        provider,
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir: await temporaryDataDir() }),
      });
      const run = runtime.startRun({ workspaceId: `takeover-${Date.now()}`, botId: "alpha" });
      const machine = await run.machine();
      owned.push(machine);
      run.state = "waiting_takeover";
      const lease = await runtime.takeover({
        computerId: run.computerId,
        botId: "alpha",
        holder: "person",
        ttlMs: 60_000,
      });
      const desktop = await runtime.desktopFor({ computerId: run.computerId, botId: "alpha" });
      await desktop.observe();
      await sleep(WORK_MS);
      expect(stateOf(machine)).toBe("running");
      await desktop.observe();
      await desktop.release();
      await runtime.releaseTakeover(lease);
      run.state = "active";
      expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
      await run.end("completed");
    }, 120_000);

    it("without the keep-alive the same command is paused under it (the fault is real)", async () => {
      const unkept = env.provider({ timeoutMs: TIMEOUT_MS, keepAliveMs: 10 * WORK_MS });
      const machine = await unkept.provision({ computerId: "unkept", homeKey: `unkept-${Date.now()}` });
      owned.push(machine);
      const failure = await failureOf(machine.exec({ shell: `sleep ${WORK_MS / 1000}; echo finished` }));
      expect(AgentComputerError.is(failure)).toBe(true);
      expect(stateOf(machine)).toBe("paused");
    }, 90_000);
  });
}
