import { existsSync } from "node:fs";
import { PREVIEW_DOMAIN } from "@agent-computer/provider-daytona/testing";
import { reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { type Browser, chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { daytonaTestEnvironment } from "../../packages/provider-daytona/test/daytona-test-environment.js";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  openTerminalTab,
  removeComputer,
  startScreensApp,
  terminalHasText,
  typeLine,
  waitForState,
} from "./screens-app.js";

// Issue 44: a person watches and controls a Daytona computer's screen and
// uses its terminal in real headless Chromium, through the screens proxy
// and the sandbox's signed preview URL (host form, `6080-<token>.<proxy
// domain>`), with the proxy's preview warning page on: a browser's plain
// request to the same URL gets the warning, and the screen and terminal
// work all the same (their websockets pass it, apps/proxy warning_page.go).
const env = await daytonaTestEnvironment("screens of a daytona computer in a real browser");
const missing =
  env.missing ?? (existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`);
/** What Chromium sends for a page (warning_page.go tells a browser by its User-Agent). */
const CHROME_UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

if (missing) reportMissingProvider("screens of a daytona computer in a real browser", { kind: "daytona", missing });
else {
  describe("screens of a daytona computer in a real browser", () => {
    let browser: Browser | undefined;
    afterAll(async () => {
      await browser?.close();
    });

    it("shows the screen and runs the terminal through signed preview URLs past the warning page", async () => {
      const dataDir = await temporaryDataDir();
      const app = await startScreensApp(env.provider(), dataDir);
      const { runtime, screens, origin, frames } = app;
      const workspaceId = `daytona-screens-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
      const run = runtime.startRun({ workspaceId, botId: "alpha" });
      await run.machine();
      await run.desktop();
      await run.end("completed");
      try {
        const control = await runtime.takeover({ computerId, botId: "alpha", holder: "person:ada", ttlMs: 300_000 });
        const view = await screens.issueScreenCapability({ computerId, botId: "alpha", mode: "view", ttlMs: 300_000 });
        const terminal = await screens.issueTerminalCapability({ computerId, botId: "alpha", ttlMs: 300_000, control });
        frames.set("view", view.viewerUrl).set("terminal", terminal.terminalUrl);

        // The gateway is reached by signed preview URLs in host form, and a browser asking one
        // of them for a page gets the warning: it is on.
        const gateway = app.endpoints[0];
        if (!gateway) throw new Error("the authority handed out no endpoint");
        const host = env.emulator.previewHostOf(gateway.url) ?? "";
        expect(host).toMatch(new RegExp(`^6080-[a-z0-9]{16}\\.${PREVIEW_DOMAIN.replaceAll(".", "\\.")}$`));
        const page = new URL(gateway.url);
        page.protocol = page.protocol === "wss:" ? "https:" : "http:";
        page.pathname = "/";
        const warned = await fetch(page, { headers: { "user-agent": CHROME_UA, accept: "text/html" } });
        expect(warned.status).toBe(200);
        expect(await warned.text()).toMatch(/warning/i);

        browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
        const tab = await openTerminalTab(browser, origin);
        await waitForState(tab.page, "view", "connected", 30_000, app.events);
        // The viewer draws the desktop: its canvas has the framebuffer's size.
        const size = await tab.page
          .frameLocator("#view")
          .locator("canvas")
          .evaluate((canvas: HTMLCanvasElement) => [canvas.width, canvas.height]);
        expect(size[0]).toBeGreaterThan(0);
        expect(size[1]).toBeGreaterThan(0);

        await typeLine(tab, "echo T$((6*7)) $(id -u)");
        await tab.frame.waitForFunction(terminalHasText, "T42 ");
        await runtime.releaseTakeover(control);
      } finally {
        await app.close();
        await removeComputer(app, {}, computerId);
      }
    }, 300_000);
  });
}
