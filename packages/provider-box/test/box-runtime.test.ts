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
import { boxTestEnvironment } from "./box-test-environment.js";

// The runtime on Boat, through the package's client and the emulator: two
// bots with their own desktops and cookies (their calls ride the private
// route); archive and reconnect keep the sandbox id, the home and both
// profiles on a recreated container; a sandbox the service reports
// unrecoverable is replaced and its home restored; the auto-stop is kept
// ahead while a run works and the idle sandbox archives after it.
const env = await boxTestEnvironment("box: the runtime");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("box:".length);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  let machine: Machine;

  describe("box: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("gives two bots on one Team computer their own desktops and cookies, through the private route", async () => {
      machine = await provider.provision({ computerId: "two-bots", homeKey: `two-bots-${Date.now()}` });
      owned.push(machine);
      await expectBotsKeepTheirOwnCookies(machine);
      // The desktop calls went to the resident service through the box's route on 6080.
      expect(env.emulator.routed.some((path) => path.startsWith(`/${idOf(machine)}-6080/`))).toBe(true);
    }, 150_000);

    it("stop archives; reconnect resumes the same box id on a new container, with the home and both profiles", async () => {
      const bytes = new Uint8Array(50_000).map((_, i) => (i * 13) % 256);
      await machine.files.write("notes/kept.bin", bytes);
      const before = env.emulator.containerOf(idOf(machine));
      await machine.stop();
      // Archive commits the container to an image and removes it.
      expect(env.emulator.stateOf(idOf(machine))).toBe("archived");
      expect(env.emulator.containerOf(idOf(machine))).toBeUndefined();
      const resumesBefore = env.emulator.requests.filter((r) => r.endsWith("/resume")).length;
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restored = again as Machine;
      owned.push(restored);
      expect(restored.ref).toBe(machine.ref);
      expect(env.emulator.requests.filter((r) => r.endsWith("/resume")).length).toBe(resumesBefore + 1);
      expect(env.emulator.noEnvSeen.every(Boolean)).toBe(true);
      expect(env.emulator.stateOf(idOf(machine))).toBe("ready");
      expect(env.emulator.containerOf(idOf(machine))).not.toBe(before);
      expect(await restored.files.read("notes/kept.bin")).toEqual(bytes);
      await expectBotsStillLoggedIn(restored);
    }, 180_000);

    it("replaces a box the service reports unrecoverable, with the home restored from the checkpoint", async () => {
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
        // The box breaks at the service: state "error", and resume refuses it.
        lose: async (lost) => {
          await env.emulator.breakSandbox(idOf(lost));
          expect(await provider.reconnect(lost.ref)).toBe("gone");
        },
      });
    }, 150_000);

    it("refreshes the TTL while a run works; the idle box archives after it, and the next call resumes it", async () => {
      const ttl = env.provider({ ttlSeconds: 3, ttlRefreshMs: 500 });
      const runtime = createComputerRuntime({
        provider: ttl,
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir: await temporaryDataDir() }),
      });
      const run = runtime.startRun({ workspaceId: `ttl-${Date.now()}`, botId: "alpha" });
      const box = await run.machine();
      owned.push(box);
      const id = idOf(box);
      const patches = () => env.emulator.requests.filter((r) => r === `PATCH /sandboxes/${id}`).length;
      const patchedBefore = patches();
      // Twice the TTL of work: the box never archives.
      const until = Date.now() + 6_500;
      while (Date.now() < until) {
        expect((await box.exec({ argv: ["true"] })).exitCode).toBe(0);
        expect(env.emulator.stateOf(id)).toBe("ready");
        await sleep(300);
      }
      expect(patches()).toBeGreaterThan(patchedBefore + 3);
      // The service counts the TTL from the start: the provider asked for the time since then plus the window,
      // in whole seconds (op:update's ttlSeconds is an integer), rounded up: so the auto-stop is at least the
      // window after the last refresh and less than a second more.
      const due = env.emulator.archiveAfterOf(id) as number;
      expect(due - Date.now()).toBeGreaterThan(1_500);
      expect(due - Date.now()).toBeLessThan(4_000);
      // Idle: archived once the TTL has run out, not before.
      const idleSince = Date.now();
      await expect.poll(() => env.emulator.stateOf(id), { timeout: 15_000, interval: 100 }).toBe("archived");
      expect(Date.now() - idleSince).toBeGreaterThan(2_000);
      expect(env.emulator.containerOf(id)).toBeUndefined();
      // The run goes on: its next command resumes the box (noEnv again) under the same id.
      await box.files.write("after-ttl.txt", new TextEncoder().encode("resumed"));
      expect(env.emulator.stateOf(id)).toBe("ready");
      expect(new TextDecoder().decode(await box.files.read("after-ttl.txt"))).toBe("resumed");
      await run.end("completed");
    }, 120_000);
  });
}
