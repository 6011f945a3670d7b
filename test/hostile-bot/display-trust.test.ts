import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import {
  chooseTestProvider,
  RfbTestClient,
  TerminalTestClient,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Issue 45, findings 1 to 3, on the default Docker computer (the display in
// its own container): the display side runs nothing the bot wrote into the
// shared home, and a page in the bot's browser reaches none of the display's
// services. The bot (steered by a prompt injection) plants everything
// before a person takes control; each planted program, were it run, would
// leave a file in the home the test reads.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: display trust",
);

/** First DevTools port and first x11vnc port of a desktop slot (desktop-state.ts, gateway-files.ts). */
const FIRST_CDP_PORT = 9300;
const FIRST_VNC_PORT = 5700;

/** A page that opens a websocket to each target and lists which ones opened. */
const WEBSOCKET_PROBE = `<!doctype html><title>probe</title><body><pre id="out"></pre><script>
const targets = decodeURIComponent(location.hash.slice(1)).split(",");
const results = [];
let left = targets.length;
for (const target of targets) {
  const ws = new WebSocket("ws://" + target + "/");
  const done = (what) => { if (ws.done) return; ws.done = true; results.push(what + " " + target); if (--left === 0) document.getElementById("out").textContent = "probed: " + results.sort().join("; "); };
  ws.onopen = () => { done("open"); ws.close(); };
  ws.onerror = () => done("refused");
  setTimeout(() => done("timeout"), 5000);
}
</script>`;

/** Every spelling of "this host" a page could use, with the port. */
const spellings = (port: number) =>
  ["0.0.0.0", "0", "[::ffff:0.0.0.0]", "[::]", "127.0.0.1", "127.1", "localhost", "[::1]"].map((h) => `${h}:${port}`);

if (!env.missing) {
  describe("hostile bot: display trust", () => {
    let machine: Machine;
    let desktop: LinuxDesktopSession;
    const clients: { close(): void }[] = [];
    const home = async (script: string) =>
      Buffer.from((await machine.exec({ argv: ["sh", "-c", script] })).stdout)
        .toString()
        .trim();
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    beforeAll(async () => {
      const provider = env.provider({ dataDir: await temporaryDataDir() });
      machine = await provider.provision({ computerId: "display-trust", homeKey: `display-trust-${Date.now()}` });
      // Planted before the desktop starts, so its programs would read them at start.
      const planted = await machine.exec({
        shell: `set -e
mkdir -p .config/openbox "$(python3 -c 'import site; print(site.getusersitepackages())')" probe
cat > .config/openbox/rc.xml <<'XML'
<?xml version="1.0"?>
<openbox_config xmlns="http://openbox.org/3.4/rc"><keyboard>
<keybind key="W-F12"><action name="Execute"><command>sh -c 'id -u > "$0/openbox-ran"' ${machine.workspacePath}</command></action></keybind>
</keyboard></openbox_config>
XML
for f in .bash_profile .bash_login .profile .bashrc; do echo "touch ${machine.workspacePath}/profile-ran-$f" > $f; done
printf '"\\\\C-m": " ; touch ${machine.workspacePath}/inputrc-ran\\\\n"\\n' > .inputrc
cat > probe/ws.html <<'HTML'
${WEBSOCKET_PROBE}
HTML
cd probe && setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
cd ..
for i in $(seq 1 50); do curl -fs http://127.0.0.1:8000/ws.html >/dev/null && break; sleep 0.1; done
curl -fs http://127.0.0.1:8000/ws.html >/dev/null
# Last: the bot's own Python (its server above) would run it too.
echo "import os; open('${machine.workspacePath}/pth-ran', 'w').write(str(os.getpid()))" > "$(python3 -c 'import site; print(site.getusersitepackages())')/planted.pth"`,
      });
      expect(Buffer.from(planted.stderr).toString()).toBe("");
      expect(planted.exitCode).toBe(0);
      desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
    }, 180_000);

    afterAll(async () => {
      for (const client of clients) client.close();
      await machine?.destroy().catch(() => {});
    });

    it("runs no key binding the bot wrote into the window manager's configuration", async () => {
      const outcome = await desktop.act([{ type: "key", keys: "super+F12" }]);
      expect(outcome.ok).toBe(true);
      await sleep(1500);
      expect(await home("test -e openbox-ran && echo ran || echo none")).toBe("none");
    }, 60_000);

    it("loads no Python user site from the home when it types text off the keyboard map", async () => {
      const outcome = await desktop.act([{ type: "type", text: "é" }]);
      expect(outcome.ok).toBe(true);
      expect(await home("test -e pth-ran && echo ran || echo none")).toBe("none");
      // The same file does run for the bot's own Python: the plant is live.
      await machine.exec({ argv: ["python3", "-c", "pass"] });
      expect(await home("cat pth-ran")).toMatch(/^\d+$/);
      await machine.exec({ argv: ["rm", "pth-ran"] });
    }, 60_000);

    it("gives a person's terminal a login shell that reads none of the bot's start-up files", async () => {
      const control = await desktop.screenEndpoint("control");
      const terminal = await TerminalTestClient.open(
        await desktop.terminalEndpoint(undefined, { controlId: control.id }),
      );
      clients.push(terminal);
      const [, login] = await terminal.run(
        "shopt -q login_shell && echo login=yes; echo T$((6*7))",
        /login=(\w+)\nT42\n/,
      );
      expect(login).toBe("yes");
      await terminal.run("echo done-$((1+1))", /done-2\n/);
      expect(await home("ls profile-ran-* inputrc-ran 2>/dev/null || true")).toBe("");
      await desktop.revokeEndpoint(control.id);
    }, 60_000);

    it("lets no page in the bot's browser reach the display's DevTools or x11vnc by any spelling of this host", async () => {
      const browser = desktop.pageBrowser;
      if (!browser) throw new Error("the desktop has no page browser");
      // The control x11vnc runs while a control screen is open.
      const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
      clients.push(control);
      await control.handshake();
      for (const target of spellings(FIRST_CDP_PORT)) {
        const page = await browser.navigate(`http://${target}/json/list`).catch((error: Error) => error);
        const text = page instanceof Error ? page.message : page.text;
        expect({ target, text }).not.toMatchObject({ text: expect.stringMatching(/webSocketDebuggerUrl|devtools/i) });
      }
      const targets = [...spellings(FIRST_VNC_PORT + 1), ...spellings(FIRST_VNC_PORT), "localhost:8000"];
      await browser.navigate(`http://localhost:8000/ws.html#${encodeURIComponent(targets.join(","))}`);
      let probed = "";
      for (let i = 0; i < 40 && !probed.includes("probed:"); i++) {
        await sleep(250);
        probed = (await browser.snapshot()).text;
      }
      // The bot's own server on the computer's loopback answers (not a websocket: refused after
      // connecting), which shows the probe ran; nothing display-side opens.
      expect(probed).toContain("probed:");
      expect(probed).not.toMatch(/open /);
    }, 120_000);
  });
}
