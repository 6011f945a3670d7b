import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import {
  DISPLAY_APART_CHROMIUM_POLICY,
  DISPLAY_APART_DEPRECATED_POLICIES,
  type LinuxDesktopSession,
} from "@agent-computer/desktop-runtime";
import {
  connectionsAfterPlanting,
  expectChromiumApplies,
  RfbTestClient,
  TerminalTestClient,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISPLAY_LABELS } from "../src/computer-labels.js";
import { displayContainerName, dockerTestEnvironment } from "./docker-test-environment.js";

// dockerProvider({ displayContainer: true }) on the real engine and image:
// the display stack runs in a container of its own, and a bot steered by a
// prompt injection, with every command the computer's shell allows, finds
// none of the ways to a person's takeover that a shared container gives
// (docs/architecture.md §4, "Whose input a display takes"): no X server,
// no DevTools, no screen server, no gateway process or control socket, and
// the display's container cannot be reached over the network. The person's
// control capability still moves the pointer, and the bot's own calls still
// observe, act and read pages.
const env = await dockerTestEnvironment("docker display container");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir, displayContainer: true });
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const idOf = (m: Machine) => m.ref.slice("docker:".length);
  /** As the bot: a shell in the computer's container, as its user. */
  const asBot = (script: string) =>
    spawnSync("docker", ["exec", "-u", "1000", idOf(machine), "bash", "-c", script], { encoding: "utf8" });
  /** The display's container id: the computer's label names it, the display's label names the computer back. */
  const displayContainerId = async (of = machine) => {
    const name = await displayContainerName(env.docker, of);
    const display = await env.docker.getContainer(name ?? "none").inspect();
    expect(display.Config.Labels?.[DISPLAY_LABELS.displayOf]).toBe(idOf(of));
    return display.Id;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** The display container's screen servers and the end of the gateway's and their logs. */
  const gatewayDiagnostics = async () => {
    const script =
      'pgrep -a x11vnc; cd /tmp/agent-computer-desktops/gateway && for f in gateway.log x11vnc-*.log; do echo "== $f"; tail -n 15 "$f"; done';
    const found = spawnSync("docker", ["exec", await displayContainerId(), "sh", "-c", script], { encoding: "utf8" });
    return `${found.stdout}${found.stderr}`;
  };

  describe("docker display container", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "display-apart", homeKey: `display-apart-${Date.now()}` });
      desktop = (await machine.openDesktop?.("apart-bot")) as LinuxDesktopSession;
    }, 180_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("runs the bot's desktop in the display's container, and the bot's calls still observe, act and read pages", async () => {
      expect(await displayContainerId()).toMatch(/^[0-9a-f]{64}$/);
      expect((await desktop.act([{ type: "move", x: 33, y: 44 }])).ok).toBe(true);
      expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 33, y: 44 });
      expect(await desktop.evaluateInPage("6 * 7")).toBe(42);
      // The profile lives in the shared home, so checkpoints carry it as before.
      const listed = asBot("ls -d ~/.browser-profiles/apart-bot/Default");
      expect(listed.status).toBe(0);
      // Nothing started there runs the bot's files beside the display.
      await expect(desktop.launch(["xdg-open", "/etc/hostname"])).rejects.toMatchObject({ code: "UNSUPPORTED" });
    }, 120_000);

    it("leaves a bot no way to the display during a takeover: no X, DevTools, screen server, gateway or control socket", async () => {
      // A person holds control, so the control screen server runs too.
      const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
      await control.handshake();
      const probe = [
        `DISPLAY=${desktop.display} xdotool mousemove 1 1 >/dev/null 2>&1 && echo x-input`,
        `DISPLAY=${desktop.display} xdotool getmouselocation >/dev/null 2>&1 && echo x-read`,
        "ls /tmp/.X11-unix 2>/dev/null | grep -q . && echo x-socket",
        "curl -s --max-time 2 http://127.0.0.1:9300/json/version >/dev/null && echo devtools",
        // Listening in this container's network namespace (the only loopback a process here reaches), read
        // from /proc rather than by connecting: a connection that opens and closes while a person's viewer is
        // connected stalls x11vnc for many seconds (seen in clean-clone runs 13 and 14, its log at the stall).
        'for p in 5700 5701; do grep -qi ":$(printf %04X $p) 00000000:0000 0A" /proc/net/tcp && echo vnc-$p; done',
        "pgrep -f 'X[v]fb|x11[v]nc|chromi[u]m|desktop[.]mjs gatewa[y]' >/dev/null && echo processes",
        "ls /tmp/agent-computer-desktops/gateway 2>/dev/null | grep -q . && echo control-socket",
        "true",
      ].join("; ");
      try {
        const attack = asBot(probe);
        expect(attack.status).toBe(0);
        expect(attack.stdout.trim()).toBe("");
        // The same probe in the display's container finds all of it: a probe that found nothing anywhere would prove nothing.
        const there = spawnSync("docker", ["exec", "-u", "1000", await displayContainerId(), "bash", "-c", probe], {
          encoding: "utf8",
        });
        expect(there.stdout.trim().split("\n").sort()).toEqual(
          ["control-socket", "devtools", "processes", "vnc-5701", "x-input", "x-read", "x-socket"].sort(),
        );
      } finally {
        control.close();
      }
    }, 60_000);

    it("refuses a javascript: URL a bot types into the address bar, which would put its script in the page", async () => {
      await desktop.evaluateInPage("document.title = 'before'");
      const typed = await desktop.act([
        { type: "key", keys: "ctrl+l" },
        { type: "type", text: "javascript:document.title='planted'" },
        { type: "key", keys: "Return" },
        { type: "wait", ms: 1000 },
      ]);
      expect(typed.ok).toBe(true);
      expect(await desktop.evaluateInPage("document.title")).toBe("before");
      // Nor through the console of a DevTools window opened with a key.
      const consoled = await desktop.act([
        { type: "key", keys: "ctrl+shift+j" },
        { type: "wait", ms: 1500 },
        { type: "type", text: "document.title='planted'" },
        { type: "key", keys: "Return" },
        { type: "wait", ms: 500 },
      ]);
      expect(consoled.ok).toBe(true);
      expect(await desktop.evaluateInPage("document.title")).toBe("before");
    }, 60_000);

    it("runs the display's browser under every policy of a display apart, by Chromium's own account", async () => {
      // Written is not applied: chrome://policy lists what Chromium knows and took. Among them
      // PasswordManagerEnabled "false": nothing a person types is offered for saving into the
      // profile the bot reads.
      await expectChromiumApplies(desktop, DISPLAY_APART_CHROMIUM_POLICY, DISPLAY_APART_DEPRECATED_POLICIES);
    }, 60_000);

    it("sends no request of the display's browser to a proxy the bot planted in its profile", async () => {
      // The profile is in the home the bot writes. The loopback proxy on the command line wins
      // over a `proxy` preference planted there before a browser starts, which would otherwise
      // carry a person's pages to the bot (Kubernetes' case, with no proxy on its command line,
      // got 7 requests before --no-proxy-server).
      const heard = await connectionsAfterPlanting({
        machine,
        asBot,
        bot: "planted-bot",
        file: "Default/Preferences",
        settings: (port) => `{"proxy":{"mode":"fixed_servers","server":"computer:${port}"}}`,
        listenOn: "0.0.0.0",
      });
      expect(heard).toBe("0");
    }, 90_000);

    it("keeps the display's container off the bot's network path, on both its networks", async () => {
      const info = await env.docker.getContainer(await displayContainerId()).inspect();
      const addresses = Object.values(info.NetworkSettings.Networks ?? {}).map((n) => n.IPAddress);
      // The provider's network and the pair network the loopback proxy is reached on.
      expect(addresses).toHaveLength(2);
      for (const address of addresses) {
        expect(address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        const gateway = asBot(
          `curl -s --max-time 2 -o /dev/null -w '%{http_code}' http://${address}:6080/ || echo unreachable`,
        );
        expect(gateway.stdout, address).toContain("unreachable");
        expect(gateway.stdout, address).not.toMatch(/[1-5]\d\d/);
        // Nor any service of the display that listens on its loopback (X, DevTools, the screen servers).
        const services = asBot(
          `for p in 6000 6100 9300 5700 5701; do timeout 1 bash -c "echo > /dev/tcp/${address}/$p" 2>/dev/null && echo open-$p; done; true`,
        );
        expect(services.stdout.trim(), address).toBe("");
      }
    }, 60_000);

    it("loads, in the display's browser, pages the bot serves on its computer's loopback", async () => {
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      const served = asBot(
        `mkdir -p ~/served && echo '<!doctype html><title>Served in the computer</title>' > ~/served/index.html
        cd ~/served && setsid nohup python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
        for i in $(seq 1 100); do curl -fs http://127.0.0.1:${port}/ >/dev/null && exit 0; sleep 0.1; done; exit 1`,
      );
      expect(served.status).toBe(0);
      try {
        for (const host of ["127.0.0.1", "localhost"]) {
          const page = await desktop.pageBrowser?.navigate(`http://${host}:${port}/index.html`);
          expect(page?.title, host).toBe("Served in the computer");
        }
        // The display's own loopback is not the one these URLs reach: nothing listens there on that port.
        const display = await displayContainerId();
        const direct = spawnSync("docker", ["exec", "-u", "1000", display, "curl", "-s", `http://127.0.0.1:${port}/`]);
        expect(direct.status).not.toBe(0);
      } finally {
        asBot(`pkill -f 'http.server ${port}'`);
      }
    }, 60_000);

    it("has a loopback proxy that opens the computer's loopback and nothing else", async () => {
      const display = await displayContainerId();
      const viaProxy = (url: string) =>
        spawnSync(
          "docker",
          ["exec", "-u", "1000", display, "curl", "-s", "--max-time", "5", "--socks5-hostname", "computer:6090", url],
          {
            encoding: "utf8",
          },
        );
      // The display's own gateway, the host's end of the provider's network, the computer by its name.
      const info = await env.docker.getContainer(display).inspect();
      const address = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress;
      for (const url of [`http://${address}:6080/`, "http://172.17.0.1/", "http://computer:6090/"]) {
        const refused = viaProxy(url);
        // curl's 97: the proxy refused the CONNECT (SOCKS reply 2, not allowed).
        expect(refused.status, url).toBe(97);
        expect(refused.stdout, url).toBe("");
      }
    }, 60_000);

    it("gives a person's control capability the pointer", async () => {
      const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
      try {
        // CI runs A and D saw no banner within 10 s here, once each, under load, never since
        // by hand: a failure says what the gateway and its screen servers were doing.
        await control.handshake().catch(async (error: Error) => {
          throw new Error(`${error.message}\n${await gatewayDiagnostics()}`);
        });
        control.pointer(101, 202);
        const until = Date.now() + 5000;
        let cursor = (await desktop.observe(undefined, { includeImage: false })).cursor;
        while (Date.now() < until && cursor.x !== 101) {
          await sleep(100);
          cursor = (await desktop.observe(undefined, { includeImage: false })).cursor;
        }
        expect(cursor).toEqual({ x: 101, y: 202 });
      } finally {
        control.close();
      }
    }, 60_000);

    it("runs a person's terminal beside the bot's processes: their loopback servers, /tmp and processes", async () => {
      const stamp = Date.now();
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      const started = asBot(
        `echo only-in-the-computer > /tmp/bot-${stamp}; mkdir -p ~/bots/apart-bot
        setsid nohup sleep 4${stamp % 1000} >/dev/null 2>&1 < /dev/null &
        cd /tmp && setsid nohup python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
        for i in $(seq 1 100); do curl -fs http://127.0.0.1:${port}/ >/dev/null && exit 0; sleep 0.1; done; exit 1`,
      );
      expect(started.status).toBe(0);
      const control = await desktop.screenEndpoint("control");
      const terminal = await TerminalTestClient.open(
        await desktop.terminalEndpoint(undefined, { controlId: control.id }),
      );
      const ptyServers = (container: string) =>
        spawnSync("docker", ["exec", container, "sh", "-c", "pgrep -f terminal-pty-serve[r] | wc -l"], {
          encoding: "utf8",
        }).stdout.trim();
      try {
        const [, file, process, served] = await terminal.run(
          `printf 'F=%s P=%s S=%s\\n' "$(cat /tmp/bot-${stamp})" "$(pgrep -fc '^sleep 4${stamp % 1000}$')" "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}/)"`,
          /F=(\S*) P=(\d+) S=(\d+)\n/,
        );
        expect({ file, process, served }).toEqual({ file: "only-in-the-computer", process: "1", served: "200" });
        const [, where, display] = await terminal.run(
          'printf "W=%s D=%s.\\n" "$PWD" "$DISPLAY"',
          /W=(\S+) D=(\S*)\.\n/,
        );
        // The bot's folder, and no display: the bot's own processes have none either.
        expect({ where, display }).toEqual({ where: `${machine.workspacePath}/bots/apart-bot`, display: "" });
        expect(ptyServers(idOf(machine))).toBe("1");
        expect(ptyServers(await displayContainerId())).toBe("0");
      } finally {
        terminal.close();
        await desktop.revokeEndpoint(control.id);
        asBot(`pkill -f 'http.server ${port}'; pkill -f 'sleep 4${stamp % 1000}'`);
      }
      // The session's last connection closed: its PTY server and shells are gone from the computer.
      const until = Date.now() + 10_000;
      while (Date.now() < until && ptyServers(idOf(machine)) !== "0") await sleep(100);
      expect(ptyServers(idOf(machine))).toBe("0");
    }, 60_000);

    it("gives a page of the display's browser no shell from the computer's terminal host", async () => {
      const display = await displayContainerId();
      // What a page can send (an HTTP request) is refused at its first line: the connection closes, empty.
      const page = spawnSync(
        "docker",
        [
          "exec",
          "-u",
          "1000",
          display,
          "curl",
          "-s",
          "--max-time",
          "5",
          "-X",
          "POST",
          "--data",
          "id",
          "http://computer:6091/",
        ],
        { encoding: "utf8" },
      );
      // curl's 52: the server closed the connection without a reply.
      expect(page.status).toBe(52);
      expect(page.stdout).toBe("");
    }, 30_000);

    it("opens a file of the home in the bot's browser on the display, and refuses what it would download", async () => {
      const stamp = Date.now();
      asBot(
        `mkdir -p ~/bots/apart-bot && echo "opened-${stamp}" > ~/bots/apart-bot/notes-${stamp}.txt && echo x > ~/sheet.xlsx`,
      );
      const path = `${machine.workspacePath}/bots/apart-bot/notes-${stamp}.txt`;
      await desktop.open(path);
      const display = await displayContainerId();
      // The display's DevTools lists the new tab at the file's URL; the page shows the file.
      const tabs = () =>
        spawnSync(
          "docker",
          [
            "exec",
            "-u",
            "1000",
            display,
            "sh",
            "-c",
            "for p in $(seq 9300 9420); do curl -s --max-time 1 http://127.0.0.1:$p/json/list; done",
          ],
          { encoding: "utf8" },
        ).stdout;
      const until = Date.now() + 10_000;
      while (Date.now() < until && !tabs().includes(`file://${path}`)) await sleep(250);
      expect(tabs()).toContain(`"url": "file://${path}"`);
      await expect(desktop.open(`${machine.workspacePath}/sheet.xlsx`)).rejects.toMatchObject({ code: "UNSUPPORTED" });
      await expect(desktop.open(`${machine.workspacePath}/missing-${stamp}.txt`)).rejects.toMatchObject({
        code: "NOT_FOUND",
      });
    }, 60_000);

    // Last but the lifecycle cases: the new window takes the focus the earlier cases type into.
    it("starts the image's desktop applications on the bot's desktop, and nothing of the workspace", async () => {
      // Not a desktop application of the image: a shell, a program in the home, a path outside the image's folders.
      asBot("printf '#!/bin/sh\\ntouch /tmp/ran\\n' > ~/tool.sh && chmod +x ~/tool.sh");
      for (const argv of [["sh", "-c", "touch /tmp/ran"], [`${machine.workspacePath}/tool.sh`], ["x11vnc"]]) {
        await expect(desktop.launch(argv), argv[0]).rejects.toMatchObject({ code: "UNSUPPORTED" });
      }
      const windows = async (classname: string) => {
        const display = await displayContainerId();
        const search = ["xdotool", "search", "--onlyvisible", "--classname", classname];
        const found = spawnSync(
          "docker",
          ["exec", "-u", "1000", "-e", `DISPLAY=${desktop.display}`, display, ...search],
          {
            encoding: "utf8",
          },
        );
        return found.stdout.trim().split("\n").filter(Boolean).length;
      };
      const before = await windows("chromium");
      await desktop.launch([
        "chromium",
        `--user-data-dir=${machine.workspacePath}/.browser-profiles/apart-bot`,
        "--new-window",
      ]);
      let until = Date.now() + 15_000;
      while (Date.now() < until && (await windows("chromium")) <= before) await sleep(250);
      expect(await windows("chromium")).toBeGreaterThan(before);
      // Another application of the image: ImageMagick's viewer, on the bot's display.
      expect(asBot("convert -size 64x64 xc:red ~/red.png").status).toBe(0);
      await desktop.launch(["display", `${machine.workspacePath}/red.png`]);
      until = Date.now() + 15_000;
      while (Date.now() < until && (await windows("display")) === 0) await sleep(250);
      expect(await windows("display")).toBeGreaterThan(0);
      const ran = spawnSync(
        "docker",
        ["exec", await displayContainerId(), "sh", "-c", "test -e /tmp/ran && echo ran || echo none"],
        {
          encoding: "utf8",
        },
      );
      expect(ran.stdout.trim()).toBe("none");
    }, 60_000);

    it("stops, resumes and destroys both containers together", async () => {
      const displayId = await displayContainerId();
      await machine.stop();
      expect((await env.docker.getContainer(displayId).inspect()).State.Running).toBe(false);
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      expect((await env.docker.getContainer(displayId).inspect()).State.Running).toBe(true);
      // list never takes the display's container for a computer.
      const refs = await provider.list({ labels: {} });
      expect(refs).toContain(machine.ref);
      expect(refs).not.toContain(`docker:${displayId}`);
      const pairNetwork = (await env.docker.getContainer(idOf(machine)).inspect()).Config.Labels?.[
        DISPLAY_LABELS.displayNetwork
      ];
      expect((await env.docker.getNetwork(pairNetwork ?? "none").inspect()).Internal).toBe(true);
      await machine.destroy();
      await expect(env.docker.getContainer(displayId).inspect()).rejects.toMatchObject({ statusCode: 404 });
      await expect(env.docker.getNetwork(pairNetwork ?? "none").inspect()).rejects.toMatchObject({ statusCode: 404 });
    }, 120_000);

    it("removes, at the next provision, a display whose computer's container was removed by hand", async () => {
      const stamp = Date.now();
      const kept = await provider.provision({ computerId: "display-kept", homeKey: `display-kept-${stamp}` });
      const first = await provider.provision({ computerId: "display-left", homeKey: `display-left-${stamp}` });
      let leftDisplay = "none";
      let next: Machine | undefined;
      try {
        // Each display starts with its computer's first desktop call.
        await Promise.all([kept.openDesktop?.("kept-bot"), first.openDesktop?.("left-bot")]);
        leftDisplay = await displayContainerId(first);
        const leftNetwork = (await env.docker.getContainer(idOf(first)).inspect()).Config.Labels?.[
          DISPLAY_LABELS.displayNetwork
        ];
        await env.docker.getContainer(idOf(first)).remove({ force: true });
        expect((await env.docker.getContainer(leftDisplay).inspect()).State.Running).toBe(true);
        next = await provider.provision({ computerId: "display-next", homeKey: `display-next-${stamp}` });
        await expect(env.docker.getContainer(leftDisplay).inspect()).rejects.toMatchObject({ statusCode: 404 });
        await expect(env.docker.getNetwork(leftNetwork ?? "none").inspect()).rejects.toMatchObject({ statusCode: 404 });
        // A live pair is never taken for one: the other computer keeps its display.
        expect((await env.docker.getContainer(await displayContainerId(kept)).inspect()).State.Running).toBe(true);
      } finally {
        await next?.destroy();
        await kept.destroy();
        // Removed by hand above, or left by a failure before: gone either way, with its display.
        await first.destroy().catch(() => {});
        await env.docker
          .getContainer(leftDisplay)
          .remove({ force: true })
          .catch(() => {});
      }
    }, 180_000);
  });
}
