import { spawnSync } from "node:child_process";
import type { DesktopSession, Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { historyOf, SITE, serveFixtureSite, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { displayContainerName, dockerTestEnvironment } from "./docker-test-environment.js";

// Two bots on one Team computer: each its own display, Chromium and
// profile; logged in with different cookies, acting at the same time;
// released and restarted on swapped slots, each keeps its own login and history.
const env = await dockerTestEnvironment("docker desktops: two bots");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  let machine: Machine;

  const open = async (bot: string) => (await machine.openDesktop?.(bot)) as LinuxDesktopSession;
  /** The container the desktops run in: the display's own by default, which the computer's label names. */
  const desktopContainer = async () =>
    env.docker.getContainer((await displayContainerName(env.docker, machine)) ?? machine.ref.slice("docker:".length));
  const cookieOf = (d: DesktopSession) => (d as LinuxDesktopSession).evaluateInPage("document.cookie");

  describe("docker desktops: two bots", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "two-bots", homeKey: `two-bots-${Date.now()}` });
      await serveFixtureSite(machine);
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("keeps each bot's cookie and history across release and a restart on another slot", async () => {
      const [alice, bob] = await Promise.all([open("alice"), open("bob")]);
      expect(new Set([alice.display, bob.display]).size).toBe(2);

      // Both log in at once, through the keyboard as an agent would.
      const login = (user: string) => [
        { type: "key" as const, keys: "ctrl+l" },
        { type: "type" as const, text: `${SITE}/login.html?user=${user}\n` },
        { type: "wait" as const, ms: 1500 },
      ];
      const outcomes = await Promise.all([alice.act(login("alice")), bob.act(login("bob"))]);
      expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
      expect(await cookieOf(alice)).toBe("session=alice");
      expect(await cookieOf(bob)).toBe("session=bob");
      const titles = await Promise.all([alice.observe(), bob.observe()]);
      expect(titles.map((o) => o.windowTitle)).toEqual([
        expect.stringMatching(/^Login/),
        expect.stringMatching(/^Login/),
      ]);

      const aliceDisplay = alice.display;
      // Whoever had the higher slot comes back first and takes the lowest,
      // so the other one lands on a slot it did not have.
      const order = Number(alice.display.slice(1)) > Number(bob.display.slice(1)) ? ["alice", "bob"] : ["bob", "alice"];
      await Promise.all([alice.release(), bob.release()]);
      await expect(alice.observe()).rejects.toMatchObject({ code: "CONFLICT" });

      const reopened = new Map<string, LinuxDesktopSession>();
      for (const bot of order) reopened.set(bot, await open(bot));
      const alice2 = reopened.get("alice") as LinuxDesktopSession;
      const bob2 = reopened.get("bob") as LinuxDesktopSession;
      expect(alice2.display).not.toBe(aliceDisplay);
      for (const [desktop, user] of [
        [alice2, "alice"],
        [bob2, "bob"],
      ] as const) {
        expect(await desktop.evaluateInPage("document.cookie", undefined, { url: `${SITE}/whoami.html` })).toBe(
          `session=${user}`,
        );
      }
      const [aliceHistory, bobHistory] = await Promise.all([historyOf(machine, "alice"), historyOf(machine, "bob")]);
      expect(aliceHistory).toContain(`${SITE}/login.html?user=alice`);
      expect(aliceHistory).not.toContain(`${SITE}/login.html?user=bob`);
      expect(bobHistory).toContain(`${SITE}/login.html?user=bob`);
      expect(bobHistory).not.toContain(`${SITE}/login.html?user=alice`);
      await Promise.all([alice2.release(), bob2.release()]);
    }, 180_000);

    it("opens the same desktop twice without a second Chromium, and lists it", async () => {
      const first = await open("carol");
      const again = await open("carol");
      expect(again.display).toBe(first.display);
      // Browser main processes of carol's profile (renderers and helpers carry --type=).
      const processes = await (await desktopContainer()).top({ ps_args: "-eo pid,args" });
      const browsers = (processes.Processes as string[][])
        .map(([, args]) => args ?? "")
        .filter(
          (args) =>
            args.startsWith("/usr/lib/chromium/chromium") &&
            args.includes("/.browser-profiles/carol") &&
            !args.includes("--type="),
        );
      expect(browsers).toHaveLength(1);
      expect((await machine.openDesktop?.("dave"))?.display).not.toBe(first.display);
      await first.release();
      await again.release(); // a second release of the same bot finds nothing to stop
      const left = spawnSync("docker", ["exec", "-u", "1000", (await desktopContainer()).id, "desktop", "list"], {
        encoding: "utf8",
      });
      const listed = JSON.parse(left.stdout).desktops.map((d: { bot: string }) => d.bot);
      expect(listed).toContain("dave");
      expect(listed).not.toContain("carol");
      await (await open("dave")).release();
    }, 120_000);

    it("lets concurrent starts take no more than screenLimit desktops", async () => {
      const limited = await provider.provision({
        computerId: "limited",
        homeKey: `limited-${Date.now()}`,
        screenLimit: 2,
      });
      try {
        const attempts = await Promise.allSettled(["w", "x", "y", "z"].map((bot) => limited.openDesktop?.(bot)));
        const opened = attempts.filter((a) => a.status === "fulfilled");
        const refused = attempts.filter((a) => a.status === "rejected").map((a) => (a as PromiseRejectedResult).reason);
        expect(opened).toHaveLength(2);
        expect(refused).toEqual([
          expect.objectContaining({ code: "MULTI_SCREEN_UNAVAILABLE" }),
          expect.objectContaining({ code: "MULTI_SCREEN_UNAVAILABLE" }),
        ]);
        expect((await limited.exec({ argv: ["true"] })).exitCode).toBe(0);
      } finally {
        await limited.destroy();
      }
    }, 120_000);
  });
}
