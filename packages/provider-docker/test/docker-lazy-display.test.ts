import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { COMPUTER_LABELS, DISPLAY_LABELS } from "../src/computer-labels.js";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The default computer (displayContainer: true) on the real engine and
// image: its display container and the network it shares with the
// computer are made on the first desktop call, not at provision (issue
// 48), so a computer that only runs shells never has them, whatever it
// goes through (a quiesce before a checkpoint, stop, reconnect). The first
// desktop calls of two bots, and of two workers holding the same computer,
// at once, make one display between them.
const env = await dockerTestEnvironment("docker lazy display");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  const machines: Machine[] = [];
  const idOf = (m: Machine) => m.ref.slice("docker:".length);
  /** What the computer's labels name: where its display and pair network are, or will be. */
  const planOf = async (m: Machine) => {
    const labels = (await env.docker.getContainer(idOf(m)).inspect()).Config.Labels ?? {};
    return { container: labels[DISPLAY_LABELS.displayContainer], network: labels[DISPLAY_LABELS.displayNetwork] };
  };
  /** Every display container serving the computer, by the label that names it. */
  const displaysOf = async (m: Machine) =>
    env.docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${DISPLAY_LABELS.displayOf}=${idOf(m)}`] }),
    });
  /** Networks of exactly this name (the engine's filter matches parts of names). */
  const networksNamed = async (name: string) =>
    (await env.docker.listNetworks({ filters: JSON.stringify({ name: [name] }) })).filter((n) => n.Name === name);
  /** X servers, window managers and browsers running in a container. */
  const displayProcesses = async (containerId: string) => {
    const top = await env.docker.getContainer(containerId).top({ ps_args: "-eo pid,args" });
    return (top.Processes as string[][])
      .map(([, args]) => args ?? "")
      .filter((args) => /Xvfb|openbox|chromium|desktop\.mjs gateway/.test(args));
  };

  afterAll(async () => {
    for (const m of machines) await m.destroy().catch(() => {});
  });

  describe("docker lazy display", () => {
    let shellOnly: Machine;

    it("never starts a display for a computer that only runs shells, through quiesce, stop and reconnect", async () => {
      // Limits and labels of its own, which the display started later must take from it.
      shellOnly = await provider.provision({
        computerId: "shell-only",
        homeKey: `shell-only-${Date.now()}`,
        resources: { cpus: 1.5, memoryMb: 3072 },
        labels: { team: "qa" },
      });
      machines.push(shellOnly);
      const plan = await planOf(shellOnly);
      // Named at provision, so every worker that reconnects finds the same ones.
      expect(plan.container).toMatch(/-display-[0-9a-f]{8}$/);
      expect(plan.network).toBe(`${plan.container}-net`);

      const ran = await shellOnly.exec({ shell: "echo hi > note.txt && cat note.txt" });
      expect(new TextDecoder().decode(ran.stdout)).toBe("hi\n");
      // A checkpoint's quiesce has no browser to close, and starts none.
      const resume = await shellOnly.quiesceDesktops?.();
      await resume?.();
      await shellOnly.stop();
      const again = await provider.reconnect(shellOnly.ref);
      if (again === "gone") throw new Error("the computer went");
      machines.push(again);
      expect((await again.exec({ argv: ["cat", "note.txt"] })).exitCode).toBe(0);

      expect(await displaysOf(shellOnly)).toEqual([]);
      await expect(env.docker.getContainer(plan.container ?? "none").inspect()).rejects.toMatchObject({
        statusCode: 404,
      });
      expect(await networksNamed(plan.network ?? "none")).toEqual([]);
      expect(await displayProcesses(idOf(shellOnly))).toEqual([]);
    }, 120_000);

    it("starts one display on the first desktop calls, from two bots and two workers at once", async () => {
      // Two workers that reconnected to the computer, neither having seen its display run.
      const [first, second] = await Promise.all([provider.reconnect(shellOnly.ref), provider.reconnect(shellOnly.ref)]);
      if (first === "gone" || second === "gone") throw new Error("the computer went");
      machines.push(first, second);
      expect(await displaysOf(shellOnly)).toEqual([]);

      const opened = (await Promise.all([
        first.openDesktop?.("alice"),
        first.openDesktop?.("bob"),
        second.openDesktop?.("carol"),
      ])) as LinuxDesktopSession[];
      expect(new Set(opened.map((d) => d.display)).size).toBe(3);

      const displays = await displaysOf(shellOnly);
      expect(displays).toHaveLength(1);
      expect(displays[0]?.State).toBe("running");
      const plan = await planOf(shellOnly);
      expect(displays[0]?.Names).toEqual([`/${plan.container}`]);
      const networks = await networksNamed(plan.network ?? "none");
      expect(networks).toHaveLength(1);
      // Both containers on it, once each.
      const joined = await env.docker.getNetwork(plan.network ?? "none").inspect();
      expect(Object.keys(joined.Containers ?? {}).sort()).toEqual([idOf(shellOnly), displays[0]?.Id].sort());
      // It has the computer's image, limits and sandbox, and never passes for a computer.
      const computer = await env.docker.getContainer(idOf(shellOnly)).inspect();
      const display = await env.docker.getContainer(displays[0]?.Id ?? "none").inspect();
      expect(display.Image).toBe(computer.Image);
      for (const key of ["NanoCpus", "Memory", "MemorySwap", "PidsLimit", "ShmSize", "CapDrop", "CapAdd"] as const) {
        expect(display.HostConfig[key], key).toEqual(computer.HostConfig[key]);
      }
      expect(display.HostConfig.NanoCpus).toBe(1_500_000_000);
      expect(display.HostConfig.SecurityOpt).toEqual(computer.HostConfig.SecurityOpt);
      expect(display.Config.User).toBe("1000:1000");
      expect(display.Config.Labels).toMatchObject({ team: "qa", [DISPLAY_LABELS.displayOf]: idOf(shellOnly) });
      expect(display.Config.Labels?.[COMPUTER_LABELS.managed]).toBeUndefined();
      // The desktops run there, none beside the bot's shell.
      expect(await displayProcesses(displays[0]?.Id ?? "none")).not.toEqual([]);
      expect(await displayProcesses(idOf(shellOnly))).toEqual([]);
      // Each worker's desktops answer, and a later bot's first call on either finds the same display.
      for (const desktop of opened) {
        expect((await desktop.act([{ type: "move", x: 12, y: 34 }])).ok).toBe(true);
      }
      const alice = (await second.openDesktop?.("alice")) as LinuxDesktopSession;
      expect(alice.display).toBe(opened[0]?.display);
      for (const desktop of opened) await desktop.release();
    }, 240_000);

    it("keeps a started display across stop and reconnect, and quiesces the desktops in it", async () => {
      const displayId = (await displaysOf(shellOnly))[0]?.Id ?? "none";
      await shellOnly.stop();
      expect((await env.docker.getContainer(displayId).inspect()).State.Running).toBe(false);
      const again = await provider.reconnect(shellOnly.ref);
      if (again === "gone") throw new Error("the computer went");
      machines.push(again);
      expect((await env.docker.getContainer(displayId).inspect()).State.Running).toBe(true);
      const desktop = (await again.openDesktop?.("dave")) as LinuxDesktopSession;
      expect((await desktop.observe(undefined, { includeImage: false })).width).toBeGreaterThan(0);
      // A fresh worker's quiesce finds the running display and closes dave's browser in it.
      const other = await provider.reconnect(shellOnly.ref);
      if (other === "gone") throw new Error("the computer went");
      const resume = await other.quiesceDesktops?.();
      expect(await displayProcesses(displayId)).not.toContainEqual(
        expect.stringMatching(/chromium.*browser-profiles\/dave/),
      );
      await resume?.();
      expect(await displaysOf(shellOnly)).toHaveLength(1);
      await desktop.release();
    }, 180_000);
  });
}
