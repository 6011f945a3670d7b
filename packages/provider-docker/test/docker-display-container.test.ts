import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { RfbTestClient, temporaryDataDir } from "@agent-computer/testing/provider-test";
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
        "for p in 5700 5701; do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && echo vnc-$p; done",
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

    // Last but the lifecycle cases: the new window takes the focus the earlier cases type into.
    it("starts the display's own browser, and nothing else, on the bot's desktop", async () => {
      await expect(desktop.launch(["sh", "-c", "touch /tmp/ran"])).rejects.toMatchObject({ code: "UNSUPPORTED" });
      const windows = async () => {
        const display = await displayContainerId();
        const search = ["xdotool", "search", "--onlyvisible", "--classname", "chromium"];
        const found = spawnSync(
          "docker",
          ["exec", "-u", "1000", "-e", `DISPLAY=${desktop.display}`, display, ...search],
          {
            encoding: "utf8",
          },
        );
        return found.stdout.trim().split("\n").filter(Boolean).length;
      };
      const before = await windows();
      await desktop.launch([
        "chromium",
        `--user-data-dir=${machine.workspacePath}/.browser-profiles/apart-bot`,
        "--new-window",
      ]);
      const until = Date.now() + 15_000;
      while (Date.now() < until && (await windows()) <= before) await sleep(250);
      expect(await windows()).toBeGreaterThan(before);
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
        await env.docker
          .getContainer(leftDisplay)
          .remove({ force: true })
          .catch(() => {});
      }
    }, 180_000);
  });
}
