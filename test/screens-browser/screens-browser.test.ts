import { existsSync } from "node:fs";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import type { ScreenCapability } from "@agent-computer/screens";
import {
  chooseTestProvider,
  reportMissingProvider,
  SITE,
  serveFixtureSite,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  removeComputer,
  secretsOf,
  startScreensApp,
  waitForState,
  watchPage,
} from "./screens-app.js";

// A person watches and controls a bot's desktop: real headless Chromium runs
// the noVNC viewer page, through the screens proxy mounted in an app's HTTP
// server, to the gateway of a real container of the computer image.
const COOKIE = "session-cookie-9f2c7e1d";
const BLUE = [20, 120, 220];
const RED = [200, 30, 30];

const env = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
const missing =
  env.missing ?? (existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`);

if (missing) reportMissingProvider("screens in a real browser", { kind: "docker", missing });
else {
  describe("screens in a real browser", () => {
    let browser: Browser | undefined;
    afterAll(async () => {
      await browser?.close();
    });

    it("views, controls, revokes and refuses a recycled slot, and logs no secret", async () => {
      const dataDir = await temporaryDataDir();
      const app = await startScreensApp(env.provider({ dataDir }), dataDir);
      const { runtime, screens, events, frames, origin } = app;
      const workspaceId = `screens-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });

      // The bot opens a blue page on its desktop, then its run ends.
      const run = runtime.startRun({ workspaceId, botId: "alpha" });
      const machine = await run.machine();
      await serveFixtureSite(machine);
      const desktop = await run.desktop();
      await desktop.pageBrowser?.navigate(`${SITE}/screen.html`);
      await run.end("completed");

      try {
        const control = await runtime.takeover({ computerId, botId: "alpha", holder: "person:ada", ttlMs: 300_000 });
        const ttlMs = 300_000;
        const view = await screens.issueScreenCapability({ computerId, botId: "alpha", mode: "view", ttlMs });
        const steer = await screens.issueScreenCapability({
          computerId,
          botId: "alpha",
          mode: "control",
          ttlMs,
          control,
        });
        const issued: ScreenCapability[] = [view, steer];
        frames.set("view", view.viewerUrl).set("control", steer.viewerUrl);

        browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
        const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
        await context.addCookies([{ name: "session", value: COOKIE, url: origin }]);
        const page = watchPage(await context.newPage());
        await page.goto(`${origin}/app`);
        await waitForState(page, "view", "connected", 30_000, events);
        await waitForState(page, "control", "connected", 30_000, events);

        // The canvas shows the bot's page.
        await waitForPixel(page, "view", BLUE);
        await waitForPixel(page, "control", BLUE);

        // A view session's click changes nothing; a control session's click turns the page red.
        await page.frameLocator("#view").locator("canvas").click();
        await page.waitForTimeout(1500);
        expect(await centrePixel(page, "view")).toSatisfy(near(BLUE));
        await page.frameLocator("#control").locator("canvas").click();
        await waitForPixel(page, "view", RED);

        // Revoked: both sockets close within a second and the viewers say so.
        const revokedAt = Date.now();
        const revoking = Promise.all([screens.revoke(view.id), screens.revoke(steer.id)]);
        await waitForState(page, "view", "disconnected", 5000);
        await waitForState(page, "control", "disconnected", 5000);
        const closedAfterMs = Date.now() - revokedAt;
        await revoking;
        expect(closedAfterMs).toBeLessThanOrEqual(1000);
        const upgraded = events.filter((e) => e.type === "screen.proxy.websocket_upgraded");
        expect(upgraded.length).toBeGreaterThanOrEqual(2);
        for (const event of upgraded) {
          const closed = events.find(
            (e) => e.type === "screen.proxy.websocket_closed" && e.connectionId === event.connectionId,
          );
          expect(closed).toMatchObject({ closer: "revoked" });
        }

        // The slot goes to another bot: a capability for the old desktop is refused.
        const stale = await screens.issueScreenCapability({ computerId, botId: "alpha", mode: "view", ttlMs });
        issued.push(stale);
        const oldDisplay = (await runtime.desktopFor({ computerId, botId: "alpha" })).display;
        await (await runtime.desktopFor({ computerId, botId: "alpha" })).release();
        const beta = await runtime.desktopFor({ computerId, botId: "beta" });
        expect(beta.display).toBe(oldDisplay);
        frames.clear();
        frames.set("stale", stale.viewerUrl);
        await page.goto(`${origin}/app`);
        await waitForState(page, "stale", "failed", 20_000);
        expect(events).toContainEqual(
          expect.objectContaining({ type: "screen.proxy.websocket_handshake_failed", upstreamStatus: 410 }),
        );

        // Nothing secret in any event or log line.
        const logged = [...app.logLines, ...events.map((e) => JSON.stringify(e))].join("\n");
        expect(app.logLines.length).toBeGreaterThan(0);
        const sealed = issued.flatMap((c) => [c.url, c.url.split("/").pop() as string, c.viewerUrl]);
        for (const secret of secretsOf(app, [COOKIE, ...sealed])) expect(logged).not.toContain(secret);
        await runtime.releaseTakeover(control);
      } finally {
        await app.close();
        await removeComputer(app, env, computerId);
      }
    }, 300_000);
  });
}

/** The RGB at the middle of a viewer's canvas (the framebuffer, before CSS scaling). */
function centrePixel(page: Page, frame: string): Promise<number[]> {
  return page
    .frameLocator(`#${frame}`)
    .locator("canvas")
    .evaluate((canvas: HTMLCanvasElement) => {
      const data = (canvas.getContext("2d") as CanvasRenderingContext2D).getImageData(
        Math.floor(canvas.width / 2),
        Math.floor(canvas.height / 2),
        1,
        1,
      ).data;
      return [data[0], data[1], data[2]] as number[];
    });
}

const near = (want: number[]) => (got: number[]) => got.every((v, i) => Math.abs(v - (want[i] as number)) <= 12);

async function waitForPixel(page: Page, frame: string, want: number[], timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let got: number[] = [];
  while (Date.now() < deadline) {
    got = await centrePixel(page, frame);
    if (near(want)(got)) return;
    await page.waitForTimeout(100);
  }
  throw new Error(`the ${frame} canvas shows ${got}, not ${want}`);
}
