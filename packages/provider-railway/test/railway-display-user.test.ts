import { Readable } from "node:stream";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { pointerAfterTakeover } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { railwayTestEnvironment } from "./railway-test-environment.js";

// Issue 45: on Railway the display runs as a second user (the provider's
// default, `display: "second-user"`), so during a person's takeover no
// process of the bot reaches it. The bot stays the image's `computer`
// (uid 1000); root's setup makes `agent-display` (uid 1001) in each
// deployment before the bot's first command. The `"shared"` cases show
// the same probes find what a display shared with the bot gives.
const env = await railwayTestEnvironment("railway: the display as a second user");
if (!env.missing) {
  const { emulator } = env;
  const docker = env.docker as Docker;
  const provider = env.provider();
  const machines: Machine[] = [];
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const idOf = (of: Machine) => of.ref.slice("railway:".length);
  const run = async (of: Machine, line: string, extra: Record<string, string> = {}) => {
    const done = await of.exec({ argv: ["sh", "-c", line], timeoutMs: 20_000, env: extra });
    return { status: done.exitCode, out: Buffer.from(done.stdout).toString("utf8").trim() };
  };
  const asBot = (line: string, extra?: Record<string, string>) => run(machine, line, extra);
  /** A command as root in the deployment's container, through the engine (not the provider). */
  const asRoot = async (of: Machine, line: string) => {
    const container = docker.getContainer(emulator.containerOf(idOf(of)) as string);
    const exec = await container.exec({ Cmd: ["sh", "-c", line], User: "0:0", AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve) => stream.on("end", resolve));
    // The engine's multiplexed stream: 8-byte headers before each frame.
    const out: Buffer[] = [];
    const all = Buffer.concat(chunks);
    for (let at = 0; at + 8 <= all.length; at += 8 + all.readUInt32BE(at + 4)) {
      if (all[at] === 1) out.push(all.subarray(at + 8, at + 8 + all.readUInt32BE(at + 4)));
    }
    return Buffer.concat(out).toString("utf8").trim();
  };
  /** What a bot's PATH planted in its home makes root's shell do: `id` there leaves a mark with the uid it ran as. */
  const plantedId =
    "mkdir -p planted && printf '#!/bin/sh\\ntouch /tmp/planted-id-$(/usr/bin/id -u)\\nexec /usr/bin/id \"$@\"\\n' > planted/id && chmod +x planted/id";

  afterAll(async () => {
    for (const m of machines) await m.destroy().catch(() => {});
  }, 60_000);

  describe("railway: the display as a second user", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "display-user", homeKey: `display-user-${Date.now()}` });
      machines.push(machine);
      desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
    }, 180_000);

    it("runs the bot's commands as `computer` and the display's programs as `agent-display`", async () => {
      expect((await asBot("id -un; id -u")).out).toBe("computer\n1000");
      const owners = await asBot(
        "ps -eo user:20,comm | awk '$2 ~ /^(Xvfb|openbox|chromium|x11vnc)$/ { print $1 }' | sort -u",
      );
      expect(owners.out).toBe("agent-display");
    }, 30_000);

    it("leaves the bot's user no way to root: no sudo, `su` refused, root's password locked", async () => {
      expect((await asBot("command -v sudo")).status).not.toBe(0);
      expect((await asBot("su -c 'id -u' root </dev/null 2>/dev/null")).out).not.toBe("0");
      // Locked: `!` (passwd -l, the setup) or `*` (Debian's image): no password opens it.
      expect(await asRoot(machine, "getent shadow root | cut -d: -f2 | cut -c1")).toMatch(/^[!*]$/);
    }, 30_000);

    it("never lets a command's environment reach the bridge's root shell: a PATH the bot names runs only as the bot", async () => {
      await asBot(plantedId);
      expect((await asBot("true", { PATH: "/data/home/planted:/usr/local/bin:/usr/bin:/bin" })).status).toBe(0);
      expect(await asRoot(machine, "ls /tmp | grep planted-id || true")).toBe("");
      // The bot's own command still gets it.
      expect((await asBot("id -u", { PATH: "/data/home/planted:/usr/bin:/bin" })).out).toBe("1000");
      expect(await asRoot(machine, "ls /tmp | grep planted-id || true")).toBe("planted-id-1000");
    }, 30_000);

    it("gives the bot no way into the display: X wants a cookie, DevTools is no port, the display's files are closed", async () => {
      const display = desktop.display;
      expect((await asBot(`DISPLAY=${display} xdpyinfo >/dev/null 2>&1`)).status).not.toBe(0);
      expect((await asBot(`DISPLAY=${display} xdotool getmouselocation >/dev/null 2>&1`)).status).not.toBe(0);
      expect((await asBot("curl -s -m 2 http://127.0.0.1:9300/json/version")).status).not.toBe(0);
      expect((await asBot("ls /home/agent-display 2>/dev/null")).status).not.toBe(0);
      // Signals to another user's processes are refused (EPERM), whatever the bot sends.
      expect((await asBot("kill -0 $(pgrep -x Xvfb | head -1) 2>/dev/null")).status).not.toBe(0);
      // The places root's setup made.
      expect(
        (await asBot("stat -c '%U %a' /tmp/.X11-unix /data /data/home/.browser-profiles /data/home/Downloads")).out,
      ).toBe("root 1777\nroot 755\nagent-display 755\ncomputer 2775");
      expect((await asBot("cat /etc/chromium/policies/managed/agent-computer.json")).out).toContain(
        '"DownloadDirectory":"/data/home/Downloads"',
      );
    }, 30_000);

    it("keeps the person's pointer where they put it against the bot's xdotool loop (the takeover-input probe)", async () => {
      expect(await pointerAfterTakeover(desktop, desktop.display, async (line) => (await asBot(line)).status)).toEqual({
        x: 400,
        y: 300,
      });
      // The loop would otherwise start an xdotool every 50 ms until the machine goes.
      await asBot("pkill -f 'while true; do DISPLAY=' || true");
    }, 60_000);

    it("checkpoints the profile as the display's and restores it to the display, the rest to the bot", async () => {
      await asBot("mkdir -p notes && echo kept > notes/today.txt");
      const resume = await machine.quiesceDesktops?.();
      const archive = await machine.files.exportWorkspace();
      const chunks: Buffer[] = [];
      for await (const chunk of archive) chunks.push(chunk as Buffer);
      await resume?.();
      const tar = Buffer.concat(chunks);
      // The profiles' part follows the bot's part in one archive (joinHomeParts).
      expect(tar.includes(Buffer.from(".browser-profiles/bot-1/Local State"))).toBe(true);
      expect(tar.includes(Buffer.from("notes/today.txt"))).toBe(true);
      // Each part's file is removed by its owner once read (removed as the bot, the display's would stay).
      const leftOver =
        "ls -A /data/.agent-computer-transfer /home/agent-display | grep -c 'transfer-\\|export-' || true";
      await expect.poll(() => asRoot(machine, leftOver), { timeout: 10_000 }).toBe("0");

      const restored = await provider.provision({
        computerId: "display-user-2",
        homeKey: `display-user-2-${Date.now()}`,
      });
      machines.push(restored);
      await restored.files.importWorkspace(Readable.from([tar]));
      // As root: the profile inside is the display's 0700 folder, closed to the bot.
      const stat = await asRoot(
        restored,
        "cd /data/home && stat -c '%U %n' notes/today.txt .browser-profiles .browser-profiles/bot-1 '.browser-profiles/bot-1/Local State'",
      );
      expect(stat.split("\n")).toEqual([
        "computer notes/today.txt",
        "agent-display .browser-profiles",
        "agent-display .browser-profiles/bot-1",
        "agent-display .browser-profiles/bot-1/Local State",
      ]);
      expect((await run(restored, "ls .browser-profiles/bot-1 >/dev/null 2>&1")).status).not.toBe(0);
      // Nothing of the transfer is left where the bot or the display put it.
      expect(await asRoot(restored, "ls -A /data/.agent-computer-staging /data/.agent-computer-transfer")).toBe(
        "/data/.agent-computer-staging:\n\n/data/.agent-computer-transfer:",
      );
      // The restored display opens the restored profile.
      const again = (await restored.openDesktop?.("bot-1")) as LinuxDesktopSession;
      expect((await again.observe(undefined, { includeImage: false })).cursor).toBeDefined();
    }, 180_000);

    it("sets a fresh deployment up again before the bot's first command (a stop and a reconnect as `shared`)", async () => {
      const stopped = await provider.provision({ computerId: "display-fresh", homeKey: `display-fresh-${Date.now()}` });
      machines.push(stopped);
      await stopped.stop();
      // The service's name says how it was made; the provider's option does not change it.
      const again = (await env.provider({ display: "shared" }).reconnect(stopped.ref)) as Machine;
      machines.push(again);
      expect((await run(again, "id -un agent-display && stat -c '%U %a' /tmp/.X11-unix")).out).toBe(
        "agent-display\nroot 1777",
      );
      const opened = (await again.openDesktop?.("bot-1")) as LinuxDesktopSession;
      expect((await run(again, `DISPLAY=${opened.display} xdpyinfo >/dev/null 2>&1`)).status).not.toBe(0);
      const owners = await run(again, "ps -eo user:20,comm | awk '$2 == \"Xvfb\" { print $1 }'");
      expect(owners.out).toBe("agent-display");
    }, 240_000);
  });

  describe('railway: a display shared with the bot (display: "shared")', () => {
    const shared = env.provider({ display: "shared" });
    let sharedMachine: Machine;
    beforeAll(async () => {
      sharedMachine = await shared.provision({ computerId: "display-shared", homeKey: `display-shared-${Date.now()}` });
      machines.push(sharedMachine);
    }, 120_000);

    it("runs the display's programs as the bot's user, and loses the person's pointer to the bot's loop", async () => {
      const desktop = (await sharedMachine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      const owners = await run(sharedMachine, "ps -eo user:20,comm | awk '$2 == \"Xvfb\" { print $1 }'");
      expect(owners.out).toBe("computer");
      const runAsBot = async (line: string) => (await run(sharedMachine, line)).status;
      expect(await pointerAfterTakeover(desktop, desktop.display, runAsBot)).toEqual({ x: 5, y: 5 });
    }, 120_000);
  });
}
