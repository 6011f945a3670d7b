import { existsSync } from "node:fs";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { type Browser, chromium, type Frame } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  openTerminalTab,
  removeComputer,
  secretsOf,
  startScreensApp,
  type TerminalTab,
  terminalHasText,
  typeLine,
  waitForState,
} from "./screens-app.js";

// A person in control opens the bot's terminal in real headless Chromium:
// the xterm.js page, through the screens proxy, to the gateway and PTY
// server of a real container of the computer image.
const env = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
const missing =
  env.missing ?? (existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`);

/** What the terminal page offers test drivers (functions, not strings: its CSP refuses eval). */
const hasPid = () =>
  /SHELL_PID=\d+\s*$/m.test(
    (globalThis as unknown as { terminalText(options?: { all: boolean }): string }).terminalText({ all: true }),
  );
const terminalText = (frame: Frame) =>
  frame.evaluate(() =>
    (globalThis as unknown as { terminalText(options?: { all: boolean }): string }).terminalText({ all: true }),
  );

if (missing) reportMissingProvider("the terminal in a real browser", { kind: "docker", missing });
else {
  describe("the terminal in a real browser", () => {
    let browser: Browser | undefined;
    afterAll(async () => {
      await browser?.close();
    });

    it("runs the workspace user's shells, one per tab, that end with control; view never opens one", async () => {
      const dataDir = await temporaryDataDir();
      const app = await startScreensApp(env.provider({ dataDir }), dataDir);
      const { runtime, screens, origin } = app;
      const workspaceId = `terminal-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
      const run = runtime.startRun({ workspaceId, botId: "alpha" });
      const machine = await run.machine();
      await run.desktop();
      await run.end("completed");
      try {
        const control = await runtime.takeover({ computerId, botId: "alpha", holder: "person:ada", ttlMs: 300_000 });
        const terminal = await screens.issueTerminalCapability({ computerId, botId: "alpha", ttlMs: 300_000, control });
        app.frames.set("terminal", terminal.terminalUrl);
        browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });

        const first = await openTerminalTab(browser, origin);
        await typeLine(first, "whoami; echo HOME=$HOME");
        await first.frame.waitForFunction(terminalHasText, `HOME=${machine.workspacePath}`);
        const text = await terminalText(first.frame);
        expect(text).toMatch(/^computer$/m);
        expect(text).toContain(`HOME=${machine.workspacePath}`);

        // A second tab joins under the same control with a shell of its own.
        const second = await openTerminalTab(browser, origin);
        await typeLine(first, "echo SHELL_PID=$$");
        await typeLine(second, "echo SHELL_PID=$$");
        const pidOf = async (tab: TerminalTab) => {
          await tab.frame.waitForFunction(hasPid);
          return /SHELL_PID=(\d+)$/m.exec(await terminalText(tab.frame))?.[1];
        };
        const [pid1, pid2] = [await pidOf(first), await pidOf(second)];
        expect(pid1).toBeDefined();
        expect(pid2).toBeDefined();
        expect(pid1).not.toBe(pid2);

        // Control handed back: both shells close within a second.
        const releasedAt = Date.now();
        await runtime.releaseTakeover(control);
        await waitForState(first.page, "terminal", "disconnected", 5000);
        await waitForState(second.page, "terminal", "disconnected", 5000);
        expect(Date.now() - releasedAt).toBeLessThanOrEqual(1000);

        // View never opens a terminal: no lease, no capability; a view seal at the terminal route is refused.
        await expect(
          screens.issueTerminalCapability({ computerId, botId: "alpha", ttlMs: 60_000 } as never),
        ).rejects.toThrow();
        const view = await screens.issueScreenCapability({ computerId, botId: "alpha", mode: "view", ttlMs: 60_000 });
        const refused = await upgradeStatus(`${origin.replace(/^http/, "ws")}${view.url.replace("/c/", "/t/")}`);
        expect(refused).toBe(403);
        expect(app.events).toContainEqual(
          expect.objectContaining({ type: "screen.proxy.target_rejected", reason: "wrong_route" }),
        );

        const logged = [...app.logLines, ...app.events.map((e) => JSON.stringify(e))].join("\n");
        const sealed = [terminal.url, terminal.terminalUrl, view.url, view.viewerUrl];
        for (const secret of secretsOf(app, sealed)) expect(logged).not.toContain(secret);
      } finally {
        await app.close();
        await removeComputer(app, env, computerId);
      }
    }, 300_000);
  });
}

/** The HTTP status a websocket upgrade is refused with (101 if it is not). */
function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("open", () => {
      ws.close();
      resolve(101);
    });
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", reject);
  });
}
