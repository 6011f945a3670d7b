import { spawnSync } from "node:child_process";
import { Writable } from "node:stream";
import type { Machine } from "@agent-computer/core";
import {
  DISPLAY_APART_CHROMIUM_POLICY,
  DISPLAY_APART_DEPRECATED_POLICIES,
  DISPLAY_HOME,
  type LinuxDesktopSession,
} from "@agent-computer/desktop-runtime";
import {
  connectionsAfterPlanting,
  expectChromiumApplies,
  impostorHeard,
  pointerAfterTakeover,
  RfbTestClient,
  startImpostorGateway,
  TerminalTestClient,
} from "@agent-computer/testing/provider-test";
import { Exec } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISPLAY_CONTAINER_NAME } from "../src/display-container-manifest.js";
import { kubernetesTestEnvironment, TEST_NAMESPACE } from "./kubernetes-test-environment.js";

// The display stack in a second container of the computer's pod (README,
// "Takeover"; docs/architecture.md §4, "Whose input a display takes"): the
// two containers share one loopback and one IPC namespace, nothing else. A
// bot steered by a prompt injection, with every command its shell allows,
// finds no way to a person's takeover there: no X socket it may use (the
// abstract one, which it sees, wants the display's cookie), no DevTools (TCP or socket), no x11vnc that takes a client
// without the gateway's password, no gateway process, control socket or
// SysV segment. The same probe in the display's container finds what is
// there, so a probe that found nothing anywhere proves nothing. And the
// xdotool loop of issue 21 loses the pointer on a shared display and
// never wins it from a display apart.
const env = await kubernetesTestEnvironment("kubernetes display container");
if (!env.missing) {
  const { fixture } = env;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const podOf = (m: Machine) => m.ref.slice(`kubernetes:${TEST_NAMESPACE}/`.length);
  const containerOf = (m: Machine, container?: string) =>
    fixture.containerOf(TEST_NAMESPACE, podOf(m), container) as string;
  const run = (container: string, script: string) =>
    spawnSync("docker", ["exec", "-u", "1000", container, "bash", "-c", script], { encoding: "utf8" });
  const machines: Machine[] = [];
  const provision = async (displayContainer: boolean, name: string) => {
    const provider = env.provider({ seccompLocalhostProfile: "agent-computer/chromium.json", displayContainer });
    const machine = await provider.provision({ computerId: name, homeKey: `${name}-${Date.now()}` });
    machines.push(machine);
    return machine;
  };
  afterAll(async () => {
    for (const m of machines) await m.destroy().catch(() => {});
  });

  /** What a process finds of the display from where it runs; one word per way in. */
  const probeOf = (display: string) =>
    [
      `DISPLAY=${display} xdotool mousemove 1 1 >/dev/null 2>&1 && echo x-input`,
      `DISPLAY=${display} xdotool getmouselocation >/dev/null 2>&1 && echo x-read`,
      "ls /tmp/.X11-unix 2>/dev/null | grep -q . && echo x-socket",
      // The abstract X socket is the network namespace's, which the pod's containers share.
      "grep -q '@/tmp/.X11-unix' /proc/net/unix && echo x-abstract",
      'for p in $(seq 9300 9309); do grep -qi ":$(printf %04X $p) 00000000:0000 0A" /proc/net/tcp && echo devtools-tcp-$p; done',
      'for s in /tmp/agent-computer-desktops/slot-*/devtools.sock; do curl -s --max-time 2 --unix-socket "$s" http://x/json/version 2>/dev/null | grep -q webSocketDebuggerUrl && echo devtools; done',
      // An RFB client as a bot would write it: any x11vnc that offers security type None (1) takes its input.
      `python3 -c '${VNC_PROBE}'`,
      "pgrep -f 'X[v]fb|x11[v]nc|chromi[u]m|desktop[.]mjs gatewa[y]' >/dev/null && echo processes",
      "ls /tmp/agent-computer-desktops/gateway 2>/dev/null | grep -q . && echo control-socket",
      // SysV shared memory is the IPC namespace's, which the pod's containers share too.
      '[ "$(tail -n +2 /proc/sysvipc/shm | wc -l)" = 0 ] || echo sysv-shm',
      "true",
    ].join("; ");

  describe("kubernetes display container", () => {
    let machine: Machine;
    let desktop: LinuxDesktopSession;

    beforeAll(async () => {
      machine = await provision(true, "display-apart");
      desktop = (await machine.openDesktop?.("apart-bot")) as LinuxDesktopSession;
    }, 240_000);

    it("runs the bot's desktop in the pod's display container, and the bot's calls still observe, act and read pages", async () => {
      const pod = fixture.podJson(TEST_NAMESPACE, podOf(machine));
      expect(pod?.spec.containers.map((c: { name: string }) => c.name)).toEqual(["computer", DISPLAY_CONTAINER_NAME]);
      expect(pod?.spec.shareProcessNamespace).toBe(false);
      expect(pod?.status.containerStatuses.map((s: { ready: boolean }) => s.ready)).toEqual([true, true]);
      expect((await desktop.act([{ type: "move", x: 33, y: 44 }])).ok).toBe(true);
      expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 33, y: 44 });
      expect(await desktop.evaluateInPage("6 * 7")).toBe(42);
      // The profile lives in the shared home; the browser runs in the display's container only.
      expect(run(containerOf(machine), "ls -d ~/.browser-profiles/apart-bot/Default").status).toBe(0);
      expect(run(containerOf(machine, DISPLAY_CONTAINER_NAME), "pgrep -c chromium").stdout.trim()).not.toBe("0");
    }, 120_000);

    it("leaves a bot no way to the display during a takeover, where the display's container finds every one", async () => {
      const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
      await control.handshake();
      try {
        const probe = probeOf(desktop.display);
        const attack = run(containerOf(machine), probe);
        expect(attack.stderr).toBe("");
        // Xvfb holds its abstract name (so no bot can pose as it), which admits only the cookie's holders.
        expect(attack.stdout.trim()).toBe("x-abstract");
        // The display's own programs hold its cookie; its probe takes it as they do.
        const there = run(
          containerOf(machine, DISPLAY_CONTAINER_NAME),
          `export XAUTHORITY=/tmp/agent-computer-desktops/xauthority; ${probe}`,
        );
        expect(there.stdout.trim().split("\n").sort()).toEqual(
          ["control-socket", "devtools", "processes", "x-abstract", "x-input", "x-read", "x-socket"].sort(),
        );
      } finally {
        control.close();
      }
    }, 60_000);

    it("loads pages the bot serves on the pod's loopback, and types a secret into one through DevTools on the pipe", async () => {
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      const served = run(
        containerOf(machine),
        `mkdir -p ~/served && echo '<!doctype html><title>Login</title><label for="p">Password</label><input id="p" type="password">' > ~/served/index.html
        cd ~/served && setsid nohup python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
        for i in $(seq 1 100); do curl -fs http://127.0.0.1:${port}/ >/dev/null && exit 0; sleep 0.1; done; exit 1`,
      );
      expect(served.status).toBe(0);
      try {
        const origin = `http://127.0.0.1:${port}`;
        const browser = desktop.pageBrowser;
        if (!browser) throw new Error("the desktop has a page browser");
        const page = await browser.navigate(`${origin}/index.html`);
        expect(page.title).toBe("Login");
        // The person's click into the password field, as the page browser gives it.
        const field = page.elements.find((e) => e.name === "Password")?.ref;
        await browser.act({ ref: field as string, action: "click" });
        const secret = `pw-${Date.now()}`;
        const typed = await desktop.act([{ type: "type_secret", secret: "login" }], undefined, {
          secrets: [{ name: "login", value: secret, origins: [origin] }],
        });
        expect(typed.ok, JSON.stringify(typed)).toBe(true);
        expect(await desktop.evaluateInPage("document.getElementById('p').value")).toBe(secret);
      } finally {
        run(containerOf(machine), `pkill -f 'http.server ${port}'`);
      }
    }, 60_000);

    it("runs an exec in the container the API names, and refuses a pod of two without one, as the API server does", async () => {
      const execIn = async (container: string) => {
        let out = "";
        const stdout = new Writable({
          write: (chunk, _encoding, done) => {
            out += chunk;
            done();
          },
        });
        const status = new Promise<string>((resolve, reject) => {
          new Exec(fixture.kubeConfig())
            .exec(
              TEST_NAMESPACE,
              podOf(machine),
              container,
              ["sh", "-c", "echo $HOME"],
              stdout,
              null,
              null,
              false,
              (s) => resolve(s.status ?? ""),
            )
            .catch(reject);
        });
        return { status: await status, out: out.trim() };
      };
      expect(await execIn(DISPLAY_CONTAINER_NAME)).toEqual({ status: "Success", out: DISPLAY_HOME });
      expect(await execIn("computer")).toEqual({ status: "Success", out: machine.workspacePath });
      await expect(execIn("")).rejects.toThrow(/400/);
      await expect(execIn("nope")).rejects.toThrow(/400/);
    }, 30_000);

    it("reaps the orphans commands leave in either container, with no process namespace shared", async () => {
      const containers = [containerOf(machine), containerOf(machine, DISPLAY_CONTAINER_NAME)];
      for (const container of containers)
        expect(run(container, "for i in 1 2 3; do (sleep 0.2 &); done").status).toBe(0);
      await sleep(2500);
      for (const container of containers) {
        expect(run(container, "ps -eo stat= | grep -c '^Z' || true").stdout.trim(), container).toBe("0");
      }
    }, 30_000);

    it("runs a person's terminal in the bot's container, beside its processes", async () => {
      const stamp = Date.now();
      expect(run(containerOf(machine), `echo only-in-the-computer > /tmp/bot-${stamp}`).status).toBe(0);
      const control = await desktop.screenEndpoint("control");
      const terminal = await TerminalTestClient.open(
        await desktop.terminalEndpoint(undefined, { controlId: control.id }),
      );
      try {
        const [, file] = await terminal.run(`printf 'F=%s\\n' "$(cat /tmp/bot-${stamp})"`, /F=(\S*)\n/);
        expect(file).toBe("only-in-the-computer");
      } finally {
        terminal.close();
        await desktop.revokeEndpoint(control.id);
      }
    }, 60_000);

    /** As the bot: plants a setting naming a listener on the pod's loopback; the connections it then got. */
    const plantThenBrowse = (bot: string, file: string, settings: (port: number) => string) =>
      connectionsAfterPlanting({
        machine,
        asBot: (script) => run(containerOf(machine), script),
        bot,
        file,
        settings,
        listenOn: "127.0.0.1",
      });

    it("runs the display's browser under every policy of a display apart, by Chromium's own account", async () => {
      // chrome://policy lists what Chromium knows and took, not only what the manifest wrote;
      // PasswordManagerEnabled "false" among them.
      await expectChromiumApplies(desktop, DISPLAY_APART_CHROMIUM_POLICY, DISPLAY_APART_DEPRECATED_POLICIES);
    }, 60_000);

    it("sends no request of the display's browser to a proxy the bot planted in its profile", async () => {
      // The profile is in the home the bot writes, and with no egress policy nothing else names a
      // proxy: a `proxy` preference planted before the browser starts would carry every page a
      // person opens during a takeover (plain HTTP whole, HTTPS's host names) to the bot.
      const heard = await plantThenBrowse(
        "planted-bot",
        "Default/Preferences",
        (port) => `{"proxy":{"mode":"fixed_servers","server":"127.0.0.1:${port}"}}`,
      );
      expect(heard).toBe("0");
    }, 90_000);

    it("asks no DNS-over-HTTPS server the bot planted in its browser's Local State", async () => {
      // Local State (the browser's own settings) is in the profile folder too: a secure-DNS
      // template there would send the bot every host name a person opens, and let it answer for
      // them. The display's managed policy turns secure DNS off (without a managed policy, the
      // planted template drew the browser's lookups: measured with the policy removed).
      const heard = await plantThenBrowse(
        "doh-bot",
        "Local State",
        (port) => `{"dns_over_https":{"mode":"secure","templates":"https://127.0.0.1:${port}/dns-query{?dns}"}}`,
      );
      expect(heard).toBe("0");
    }, 90_000);
  });

  describe("kubernetes display container: the gateway's port", () => {
    // The port is the pod's, so the bot can take it before the display's gateway starts. The host
    // proves the gateway before it sends a call or a token (gateway-impostor.test.ts at the root):
    // a bot that got there first hears hellos and nothing a person or the host would give.
    it("gives a bot that bound the gateway's port first no call, no key and no screen token", async () => {
      const machine = await provision(true, "port-first");
      await startImpostorGateway(machine);
      const desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      // The desktop itself still works: its calls went through exec into the display's container.
      expect((await desktop.act([{ type: "move", x: 7, y: 8 }])).ok).toBe(true);
      const granted = await desktop.screenEndpoint("view").then(
        (endpoint) => ({ token: endpoint.token }),
        (error: { code?: string }) => ({ refused: error.code }),
      );
      const heard = await impostorHeard(machine);
      expect(heard).toContain("LISTENING");
      expect(heard).not.toMatch(/"t":"call"|"method"/);
      if ("token" in granted) expect(heard).not.toContain(granted.token);
      else expect(granted.refused).toBe("UNAVAILABLE");
      await machine.destroy();
    }, 240_000);
  });

  describe("kubernetes display container: X's abstract name", () => {
    // The abstract X socket is the network namespace's, which the bot shares: X clients try it
    // before the file socket, so a bot holding `@/tmp/.X11-unix/X<n>` before the display's X
    // starts would be taken for the display by the display's own programs (Chromium would draw,
    // and a person type, on the bot's server). Xvfb holds the name itself and admits only its
    // cookie's holders (display-isolation.ts): a bot that got there first gets no client, and
    // that desktop does not start.
    it("gives a bot that held the display's abstract X name first no connection from the display", async () => {
      const machine = await provision(true, "x-name-first");
      const squat = run(
        containerOf(machine),
        `setsid nohup python3 -c '${ABSTRACT_SQUATTER}' >/dev/null 2>&1 </dev/null &
        for i in $(seq 1 50); do grep -q '@/tmp/.X11-unix/X100' /proc/net/unix && exit 0; sleep 0.1; done; exit 1`,
      );
      expect(squat.status).toBe(0);
      const opened = await machine.openDesktop?.("bot-1").then(
        () => "opened",
        (error: { code?: string }) => error.code,
      );
      const heard = run(containerOf(machine), "cat /tmp/squatter.log 2>/dev/null | wc -l").stdout.trim();
      expect(heard).toBe("0");
      expect(opened).toBe("UNAVAILABLE");
      await machine.destroy();
    }, 240_000);
  });

  describe("kubernetes display container: takeover input", () => {
    /** The bot's pointer loop, then a person's control (pointerAfterTakeover): where the pointer ends. */
    const pointerAfterTakeoverOn = async (displayContainer: boolean) => {
      const machine = await provision(displayContainer, `takeover-${displayContainer ? "apart" : "shared"}`);
      try {
        const desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
        return await pointerAfterTakeover(desktop, desktop.display, (line) => run(containerOf(machine), line).status);
      } finally {
        await machine.destroy().catch(() => {});
      }
    };

    it("loses the person's pointer to the bot's loop on a display the bot shares (displayContainer: false)", async () => {
      expect(await pointerAfterTakeoverOn(false)).toEqual({ x: 5, y: 5 });
    }, 240_000);

    it("keeps the person's pointer where they put it when the display runs in the pod's display container", async () => {
      expect(await pointerAfterTakeoverOn(true)).toEqual({ x: 400, y: 300 });
    }, 240_000);
  });
}

/** Prints vnc-open-<port> for each x11vnc port (5700-5709) that offers RFB security type None. */
const VNC_PROBE = [
  "import socket",
  "for p in range(5700, 5710):",
  "  try:",
  '    s = socket.create_connection(("127.0.0.1", p), timeout=3)',
  '    s.recv(12); s.sendall(b"RFB 003.008\\n")',
  '    n = s.recv(1)[0]; types = s.recv(n) if n else b""',
  '    if 1 in types: print("vnc-open-%d" % p)',
  "    s.close()",
  "  except Exception: pass",
].join("\n");

/** Holds the abstract name of display :100 and writes a line to /tmp/squatter.log per client it gets. */
const ABSTRACT_SQUATTER = [
  "import socket",
  "s = socket.socket(socket.AF_UNIX)",
  's.bind("\\0/tmp/.X11-unix/X100")',
  "s.listen(16)",
  "while True:",
  "  c, _ = s.accept()",
  '  open("/tmp/squatter.log", "a").write("client\\n")',
  "  c.close()",
].join("\n");
