import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { DesktopSession, Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { SITE, serveFixtureSite, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// The runtime on Daytona, through the real SDK and the emulator: two bots
// with their own desktops and cookies; archive and reconnect keep the home
// and the bots' browser profiles; a sandbox deleted at the provider is
// replaced and its home restored.
const env = await daytonaTestEnvironment("daytona: the runtime");
if (!env.missing) {
  const provider = env.provider({ stopMode: "archive" });
  const owned: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("daytona:".length);
  const open = async (machine: Machine, bot: string) => (await machine.openDesktop?.(bot)) as LinuxDesktopSession;
  const cookieOf = (d: DesktopSession, url?: string) =>
    (d as LinuxDesktopSession).evaluateInPage("document.cookie", undefined, url ? { url } : undefined);
  let machine: Machine;

  describe("daytona: the runtime", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("gives two bots on one Team computer their own desktops and cookies", async () => {
      machine = await provider.provision({ computerId: "two-bots", homeKey: `two-bots-${Date.now()}` });
      owned.push(machine);
      await serveFixtureSite(machine);
      const [alice, bob] = await Promise.all([open(machine, "alice"), open(machine, "bob")]);
      expect(new Set([alice.display, bob.display]).size).toBe(2);
      const login = (user: string) => [
        { type: "key" as const, keys: "ctrl+l" },
        { type: "type" as const, text: `${SITE}/login.html?user=${user}\n` },
        { type: "wait" as const, ms: 1500 },
      ];
      const outcomes = await Promise.all([alice.act(login("alice")), bob.act(login("bob"))]);
      expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
      expect(await cookieOf(alice)).toBe("session=alice");
      expect(await cookieOf(bob)).toBe("session=bob");
      await Promise.all([alice.release(), bob.release()]);
    }, 150_000);

    it("archive, then reconnect: the same sandbox on a new container, with the home and both bots' profiles", async () => {
      const bytes = new Uint8Array(50_000).map((_, i) => (i * 13) % 256);
      await machine.files.write("notes/kept.bin", bytes);
      const before = env.emulator.containerOf(idOf(machine));
      await machine.stop();
      // Archive commits the container to an image and removes it.
      await expect.poll(() => env.emulator.stateOf(idOf(machine)), { timeout: 60_000 }).toBe("archived");
      expect(env.emulator.containerOf(idOf(machine))).toBeUndefined();
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restored = again as Machine;
      owned.push(restored);
      expect(restored.ref).toBe(machine.ref);
      expect(env.emulator.stateOf(idOf(machine))).toBe("started");
      expect(env.emulator.containerOf(idOf(machine))).not.toBe(before);
      expect(await restored.files.read("notes/kept.bin")).toEqual(bytes);
      await serveFixtureSite(restored);
      for (const user of ["alice", "bob"]) {
        const desktop = await open(restored, user);
        expect(await cookieOf(desktop, `${SITE}/whoami.html`)).toBe(`session=${user}`);
        await desktop.release();
      }
    }, 180_000);

    it("replaces a sandbox deleted at the provider, with the home restored from the checkpoint", async () => {
      const dataDir = await temporaryDataDir();
      const stateStore = new MemoryStateStore();
      const events: string[] = [];
      const make = () =>
        createComputerRuntime({
          provider,
          stateStore,
          homeStore: new LocalAgentHomeStore({ dataDir }),
          onEvent: (e) => events.push(e.type),
        });
      const workspaceId = `lost-${Date.now()}`;
      const first = make().startRun({ workspaceId, botId: "alpha" });
      const lost = await first.machine();
      owned.push(lost);
      const bytes = new Uint8Array(70_000).map((_, i) => (i * 7) % 256);
      await lost.files.write("bots/alpha/report.bin", bytes);
      await first.end("completed");
      // Someone deletes the sandbox in Daytona: the API no longer knows it.
      await env.emulator.deleteBehindTheProvider(idOf(lost));
      expect(await provider.reconnect(lost.ref)).toBe("gone");
      events.length = 0;
      const again = make().startRun({ workspaceId, botId: "alpha" });
      const replacement = await again.machine();
      owned.push(replacement);
      expect(replacement.ref).not.toBe(lost.ref);
      expect(await replacement.files.read("bots/alpha/report.bin")).toEqual(bytes);
      expect(events).toEqual(expect.arrayContaining(["provisioning", "restoring", "replaced", "ready"]));
      await again.end("completed");
    }, 150_000);
  });
}
