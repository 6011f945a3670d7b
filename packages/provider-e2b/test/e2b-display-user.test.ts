import { Readable } from "node:stream";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { pointerAfterTakeoverThroughExec, TerminalTestClient } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment, runAsSandboxRoot } from "./e2b-test-environment.js";

// Issue 45: on E2B the display runs as a second user (the provider's default,
// `display: "second-user"`), so during a person's takeover no process of the
// bot reaches it. The emulator's sandboxes get what E2B's template build
// gives a template (e2b-sandbox.ts TEMPLATE_SETUP: `user` a passwordless
// sudoer, root's password empty, /usr/local world-writable), so the first
// cases show the bot's user is no longer root's equal, and the `"shared"`
// cases show the same probes find what a sandbox as E2B builds it gives.
// The emulator's image has no sudo binary (it reaches no package mirror), so
// the sudoers line is read as root through the real SDK, as E2B gives root.
/** Ends the probe's loop, which would otherwise start an xdotool every 50 ms until the machine goes. */
const stopPointerLoop = (of: Machine) => of.exec({ shell: "pkill -f 'while true; do DISPLAY=' || true" });

const env = await e2bTestEnvironment("e2b: the display as a second user");
if (!env.missing) {
  const { emulator, apiKey } = env;
  const provider = env.provider();
  /** A command as the sandbox's root, through the real SDK: its stdout. */
  const asRoot = async (of: Machine, script: string) =>
    (await runAsSandboxRoot(emulator, apiKey, of, `${script} 2>/dev/null`)).out;
  const sudoersLine = "grep -c '^user[[:space:]]' /etc/sudoers || true";
  const machines: Machine[] = [];
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const asBot = async (line: string) => {
    const done = await machine.exec({ argv: ["sh", "-c", line], timeoutMs: 20_000 });
    return { status: done.exitCode, out: Buffer.from(done.stdout).toString("utf8").trim() };
  };

  describe("e2b: the display as a second user", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "display-user", homeKey: `display-user-${Date.now()}` });
      machines.push(machine);
      desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
    }, 180_000);
    afterAll(async () => {
      for (const m of machines) await m.destroy().catch(() => {});
    });

    it("runs the bot's commands as `user` and the display's programs as `computer`", async () => {
      expect((await asBot("id -un")).out).toBe("user");
      const owners = await asBot(
        "ps -eo user:20,comm | awk '$2 ~ /^(Xvfb|openbox|chromium|x11vnc)$/ { print $1 }' | sort -u",
      );
      expect(owners.out).toBe("computer");
    }, 30_000);

    it("leaves the bot's user no way to root: no sudoers line, no su, nothing root runs from /usr/local", async () => {
      expect(await asRoot(machine, sudoersLine)).toBe("0");
      expect((await asBot("id -nG")).out.split(" ")).not.toContain("sudo");
      expect((await asBot("su -c 'id -u' root </dev/null 2>/dev/null")).out).not.toBe("0");
      expect((await asBot("touch /usr/local/bin/planted 2>/dev/null")).status).not.toBe(0);
    }, 30_000);

    it("gives the bot no way into the display: X wants a cookie, DevTools is no port, the display's files are closed", async () => {
      const display = desktop.display;
      expect((await asBot(`DISPLAY=${display} xdpyinfo >/dev/null 2>&1`)).status).not.toBe(0);
      expect((await asBot(`DISPLAY=${display} xdotool getmouselocation >/dev/null 2>&1`)).status).not.toBe(0);
      expect((await asBot("curl -s -m 2 http://127.0.0.1:9300/json/version")).status).not.toBe(0);
      expect((await asBot("ls /home/computer 2>/dev/null")).status).not.toBe(0);
      // Signals to another user's processes are refused (EPERM), whatever the bot sends.
      expect((await asBot("kill -0 $(pgrep -x Xvfb | head -1) 2>/dev/null")).status).not.toBe(0);
    }, 30_000);

    it("keeps the person's pointer where they put it against the bot's xdotool loop (the takeover-input probe)", async () => {
      expect(await pointerAfterTakeoverThroughExec(machine, desktop)).toEqual({ x: 400, y: 300 });
      await stopPointerLoop(machine);
    }, 60_000);

    it("opens a person's terminal as the bot's user, beside its processes, not as the display's", async () => {
      const control = await desktop.screenEndpoint("control");
      const terminal = await TerminalTestClient.open(
        await desktop.terminalEndpoint(undefined, { controlId: control.id }),
      );
      try {
        const [, user] = await terminal.run(`printf 'U=%s\\n' "$(id -un)"`, /U=(\S*)\n/);
        expect(user).toBe("user");
      } finally {
        terminal.close();
        await desktop.revokeEndpoint(control.id);
      }
    }, 60_000);

    it("checkpoints the profile as the display's and restores it to the display, the rest to the bot", async () => {
      await asBot("mkdir -p notes && echo kept > notes/today.txt");
      const resume = await machine.quiesceDesktops?.();
      const archive = await machine.files.exportWorkspace();
      const chunks: Buffer[] = [];
      for await (const chunk of archive) chunks.push(chunk as Buffer);
      await resume?.();
      const tar = Buffer.concat(chunks);
      // Each part's file is removed by its owner once read: none is left in the display's home.
      await expect
        .poll(async () => await asRoot(machine, "ls /home/computer/display | grep -c '^export-' || true"))
        .toBe("0");
      // The profiles' part follows the bot's part in one archive (joinHomeParts).
      expect(tar.includes(Buffer.from(".browser-profiles/bot-1/Local State"))).toBe(true);
      expect(tar.includes(Buffer.from("notes/today.txt"))).toBe(true);

      const restored = await provider.provision({
        computerId: "display-user-2",
        homeKey: `display-user-2-${Date.now()}`,
      });
      machines.push(restored);
      await restored.files.importWorkspace(Readable.from([tar]));
      // Read as root: the profile is 0700, the display's, closed to the bot as Chromium makes it.
      const owners = await asRoot(
        restored,
        `cd ${restored.workspacePath} && stat -c '%U %a %n' notes/today.txt .browser-profiles .browser-profiles/bot-1 '.browser-profiles/bot-1/Local State'`,
      );
      expect(owners.split("\n")).toEqual([
        "user 644 notes/today.txt",
        "computer 755 .browser-profiles",
        "computer 700 .browser-profiles/bot-1",
        "computer 600 .browser-profiles/bot-1/Local State",
      ]);
      expect((await restored.exec({ shell: "ls .browser-profiles/bot-1 2>&1" })).exitCode).not.toBe(0);
      // The restored display opens the restored profile.
      const again = (await restored.openDesktop?.("bot-1")) as LinuxDesktopSession;
      expect((await again.observe(undefined, { includeImage: false })).cursor).toBeDefined();
    }, 180_000);
  });

  describe('e2b: a display shared with the bot (display: "shared")', () => {
    const shared = env.provider({ display: "shared" });
    let sharedMachine: Machine;
    beforeAll(async () => {
      sharedMachine = await shared.provision({ computerId: "display-shared", homeKey: `display-shared-${Date.now()}` });
      machines.push(sharedMachine);
    }, 120_000);

    it("is what E2B's template build gives: the bot's user a passwordless sudoer, root a `su` away", async () => {
      expect(await asRoot(sharedMachine, sudoersLine)).toBe("1");
      const bot = async (line: string) =>
        Buffer.from((await sharedMachine.exec({ argv: ["sh", "-c", line] })).stdout)
          .toString("utf8")
          .trim();
      expect((await bot("id -nG")).split(" ")).toContain("sudo");
      expect(await bot("su -c 'id -u' root </dev/null 2>/dev/null")).toBe("0");
      expect(await bot("touch /usr/local/bin/planted && echo planted")).toBe("planted");
    }, 30_000);

    it("loses the person's pointer to the bot's loop", async () => {
      const desktop = (await sharedMachine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      expect(await pointerAfterTakeoverThroughExec(sharedMachine, desktop)).toEqual({ x: 5, y: 5 });
    }, 120_000);
  });
}

// Novita runs the same code, its files in parts (NOVITA_PARTS): the two-part export and the root
// import move as the display's user and as root there too.
const novita = await e2bTestEnvironment("novita: the display as a second user", "novita");
if (!novita.missing) {
  describe("novita: the display as a second user", () => {
    let machine: Machine;
    beforeAll(async () => {
      machine = await novita.provider().provision({ computerId: "novita-user", homeKey: `novita-user-${Date.now()}` });
    }, 180_000);
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    });

    it("keeps the person's pointer, and a checkpoint brings the profile back as the display's", async () => {
      const desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      expect(await pointerAfterTakeoverThroughExec(machine, desktop)).toEqual({ x: 400, y: 300 });
      await stopPointerLoop(machine);
      await desktop.release();
      const resume = await machine.quiesceDesktops?.();
      const chunks: Buffer[] = [];
      for await (const chunk of await machine.files.exportWorkspace()) chunks.push(chunk as Buffer);
      await resume?.();
      await machine.exec({ shell: "echo later > later.txt" });
      await machine.files.importWorkspace(Readable.from([Buffer.concat(chunks)]));
      const stat = await machine.exec({ shell: "ls later.txt 2>&1; stat -c '%U %n' .browser-profiles/bot-1" });
      expect(Buffer.from(stat.stdout).toString("utf8")).toMatch(
        /No such file[\s\S]*computer \.browser-profiles\/bot-1/,
      );
    }, 180_000);
  });
}
