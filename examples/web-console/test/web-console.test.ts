import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime, LocalAgentHomeStore, MemoryStateStore } from "@agent-computer/runtime";
import { chooseTestProvider, reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedBot } from "../src/scripted-bot.js";
import { startWebConsole } from "../src/web-console.js";
import {
  BLUE,
  CHROMIUM,
  CHROMIUM_ARGS,
  COLOURS,
  colourShare,
  missingChromium,
  ORANGE,
  saveShot,
  watchForPageErrors,
} from "./console-browser.js";

// The console as a person uses it, in real headless Chromium against two
// scripted bots on a real Docker computer: both screens live, a takeover
// refused in place while the bot runs and accepted once it stopped (the
// control screen, the terminal, an upload through the Files window), and
// the feed moving. Each state's screenshot goes to out/ and its colours are
// checked here.

const env = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
const missing = env.missing ?? missingChromium;

const near = (want: readonly number[]) => (got: number[]) => want.every((v, i) => Math.abs(v - (got[i] ?? -99)) <= 30);

/** The colour in the middle of a frame's canvas. */
function centreOf(page: Page, frame: string): Promise<number[]> {
  return page
    .frameLocator(frame)
    .locator("canvas")
    .evaluate((canvas: HTMLCanvasElement) => {
      const d = (canvas.getContext("2d") as CanvasRenderingContext2D).getImageData(
        canvas.width >> 1,
        canvas.height >> 1,
        1,
        1,
      ).data;
      return [d[0] ?? 0, d[1] ?? 0, d[2] ?? 0];
    });
}

if (missing) reportMissingProvider("the web console in a real browser", { kind: "docker", missing });
else {
  describe("the web console in a real browser on Docker", () => {
    let browser: Browser;
    let page: Page;
    let web: Awaited<ReturnType<typeof startWebConsole>>;
    let runtime: ReturnType<typeof createComputerRuntime>;
    const bots: ScriptedBot[] = [];
    let pageErrors: string[];

    beforeAll(async () => {
      const dataDir = await temporaryDataDir();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      runtime = createComputerRuntime({
        provider: dockerProvider({ docker: env.docker, image: env.image, dataDir }),
        stateStore: new MemoryStateStore(),
        homeStore,
        idleMs: 0,
      });
      const workspaceId = `console-${Date.now().toString(36)}`;
      web = await startWebConsole({
        runtime,
        homeStore,
        workspaceId,
        bots,
        provider: { name: "docker", reason: "SANDBOX_PROVIDER=docker" },
      });
      const options = { runtime, workspaceId, onActivity: web.onActivity };
      bots.push(
        new ScriptedBot("alice", { ...options, colour: `rgb(${BLUE})`, port: 8801 }),
        new ScriptedBot("bob", { ...options, colour: `rgb(${ORANGE})`, port: 8802 }),
      );
      await Promise.all(bots.map((bot) => bot.start()));
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      pageErrors = watchForPageErrors(page);
      await page.goto(web.url);
    }, 180_000);

    afterAll(async () => {
      for (const bot of bots) if (bot.state === "running") await bot.stop().catch(() => undefined);
      await browser?.close();
      await web?.close();
      const record = web && (await runtime.leases.getComputer(web.computerId));
      if (web) await runtime.deleteComputer(web.computerId).catch(() => {});
      const id = record?.providerRef?.slice("docker:".length);
      if (id)
        await env.docker
          .getContainer(id)
          .remove({ force: true })
          .catch(() => {});
    }, 60_000);

    it("shows both bots running, each with its live screen", async () => {
      await expect.poll(() => centreOf(page, "#screen-alice"), { timeout: 30_000 }).toSatisfy(near(BLUE));
      await expect.poll(() => centreOf(page, "#screen-bob"), { timeout: 30_000 }).toSatisfy(near(ORANGE));
      for (const botId of ["alice", "bob"]) {
        const card = page.locator(`.bot[data-bot="${botId}"]`);
        await expect.poll(() => card.getAttribute("data-screen"), { timeout: 20_000 }).toBe("live");
        await expect.poll(() => card.locator(".state").textContent()).toBe("running");
      }
      await expect.poll(() => page.locator("#computer-state").textContent()).toBe("running");

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-running.png", shot);
      for (const [botId, colour] of [
        ["alice", BLUE],
        ["bob", ORANGE],
      ] as const) {
        const card = page.locator(`.bot[data-bot="${botId}"]`);
        expect(await colourShare(shot, card.locator(".state"), COLOURS.running), `${botId}'s badge`).toBeGreaterThan(
          0.5,
        );
        expect(await colourShare(shot, card.locator(".screen"), colour, 30), `${botId}'s screen`).toBeGreaterThan(0.3);
      }
      expect(await colourShare(shot, page.locator("#computer-state"), COLOURS.running)).toBeGreaterThan(0.5);
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it("refuses Take control while the bot runs, in place: Stop the bot first", async () => {
      const alice = page.locator('.bot[data-bot="alice"]');
      await alice.locator('button[data-op="takeover"]').click();
      await expect.poll(() => alice.locator(".message .code").textContent()).toBe("BOT_BUSY");
      expect(await alice.locator(".message .text").textContent()).toMatch(/^Stop the bot first/);
      expect(await page.locator("#control").isHidden()).toBe(true);
      expect(await alice.locator(".state").textContent()).toBe("running");

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-error.png", shot);
      expect(await colourShare(shot, alice.locator(".message .code"), COLOURS.error), "the code").toBeGreaterThan(0.5);
      expect(await colourShare(shot, alice.locator(".message"), COLOURS.noteError, 3), "the message").toBeGreaterThan(
        0.4,
      );
    }, 60_000);

    it("gives control once the bot stopped: its screen, terminal and Files window, and the feed moves", async () => {
      const alice = page.locator('.bot[data-bot="alice"]');
      await alice.locator('button[data-op="stop"]').click();
      await expect.poll(() => alice.locator(".state").textContent(), { timeout: 30_000 }).toBe("idle");
      await alice.locator('button[data-op="takeover"]').click();
      await page.locator("#control #terminal").waitFor();
      await expect.poll(() => alice.locator(".state").textContent()).toBe("controlled by you");
      const control = page.locator("#control");
      await expect
        .poll(() => control.locator('[data-part="screen"] .badge').textContent(), { timeout: 30_000 })
        .toBe("connected");
      await expect.poll(() => centreOf(page, "#control-screen"), { timeout: 30_000 }).toSatisfy(near(BLUE));

      const terminal = (await (await page.$("#terminal"))?.contentFrame()) as Frame;
      await terminal.waitForFunction(() => document.documentElement.dataset.state === "connected", undefined, {
        timeout: 30_000,
      });
      await page.locator("#terminal").click();
      await page.keyboard.type("whoami");
      await page.keyboard.press("Enter");
      await terminal.waitForFunction(
        () =>
          /^computer\s*$/m.test(
            (globalThis as unknown as { terminalText(o: { all: boolean }): string }).terminalText({ all: true }),
          ),
        undefined,
        { timeout: 15_000 },
      );

      const files = page.frameLocator("#files");
      await files.locator('li[data-path="bots/alice/work.log"]').waitFor({ timeout: 15_000 });
      await files.locator("#upload").setInputFiles({
        name: "brief.txt",
        mimeType: "text/plain",
        buffer: Buffer.from("notes from the person\n"),
      });
      await expect.poll(() => files.locator("#status").textContent()).toMatch(/^Uploaded bots\/alice\/brief.txt/);

      // The feed: the upload, and bob still at work.
      const feed = page.locator("#feed li");
      await expect
        .poll(() => feed.allTextContents())
        .toEqual(
          expect.arrayContaining([expect.stringMatching(/alice.*uploaded bots\/alice\/brief.txt \(22 bytes\)/)]),
        );
      const seen = await feed.count();
      await expect.poll(() => feed.count(), { timeout: 10_000 }).toBeGreaterThan(seen);
      expect((await feed.allTextContents()).some((t) => /bob.*echo "step \d+/.test(t))).toBe(true);

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-controlled.png", shot);
      expect(await colourShare(shot, alice.locator(".state"), COLOURS.controlled), "the badge").toBeGreaterThan(0.5);
      expect(await colourShare(shot, control.locator('[data-part="screen"] .pane-body'), BLUE, 30)).toBeGreaterThan(
        0.3,
      );
      expect(
        await colourShare(shot, page.locator('.bot[data-bot="bob"] .screen'), ORANGE, 30),
        "bob's screen",
      ).toBeGreaterThan(0.3);

      await control.locator("#control-release").click();
      await expect.poll(() => alice.locator(".state").textContent()).toBe("idle");
      expect(await control.isHidden()).toBe(true);
      // The refusal asked for is the only failed request the page saw.
      expect(pageErrors).toEqual(["409 POST /api/takeover/alice"]);
    }, 90_000);
  });
}
