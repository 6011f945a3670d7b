import { createComputerRuntime, LocalAgentHomeStore, MemoryStateStore } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedBot } from "../src/scripted-bot.js";
import { startWebConsole } from "../src/web-console.js";
import {
  BLUE,
  CHROMIUM,
  CHROMIUM_ARGS,
  COLOURS,
  colourShare,
  gatedProvider,
  missingChromium,
  ORANGE,
  saveShot,
  watchForPageErrors,
} from "./console-browser.js";

// The console on the fake provider, in real headless Chromium, with the
// fake's live screens turned off (liveScreens: false), as on a provider
// without a gateway: the page says so per bot instead of going blank.
// Its computer is held while the page loads, so the starting state shows
// first. Screenshots go to out/ and their colours are checked here.

if (missingChromium)
  reportMissingProvider("the web console on the fake provider", { kind: "Chromium", missing: missingChromium });
else {
  describe("the web console on the fake provider", () => {
    let browser: Browser;
    let page: Page;
    let web: Awaited<ReturnType<typeof startWebConsole>>;
    let letTheComputerStart: () => void;
    const bots: ScriptedBot[] = [];
    let pageErrors: string[];

    beforeAll(async () => {
      const dataDir = await temporaryDataDir();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const held = new Promise<void>((resolve) => {
        letTheComputerStart = resolve;
      });
      const runtime = createComputerRuntime({
        provider: gatedProvider(createFakeProvider({ liveScreens: false }), () => held),
        stateStore: new MemoryStateStore(),
        homeStore,
        idleMs: 0,
      });
      const workspaceId = `console-fake-${Date.now().toString(36)}`;
      web = await startWebConsole({
        runtime,
        homeStore,
        workspaceId,
        bots,
        provider: { name: "fake", reason: "SANDBOX_PROVIDER=fake" },
      });
      // On the fake provider the bots' page servers run on this host: ports no one else uses.
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      const options = { runtime, workspaceId, onActivity: web.onActivity };
      bots.push(
        new ScriptedBot("alice", { ...options, colour: `rgb(${BLUE})`, port }),
        new ScriptedBot("bob", { ...options, colour: `rgb(${ORANGE})`, port: port + 1 }),
      );
      for (const bot of bots) bot.start().catch(() => undefined);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      pageErrors = watchForPageErrors(page);
    }, 60_000);

    afterAll(async () => {
      letTheComputerStart?.();
      for (const bot of bots) await bot.stop().catch(() => undefined);
      await browser?.close();
      await web?.close();
    });

    it("shows each bot starting while its computer is provisioned, with the time waited", async () => {
      await page.goto(web.url);
      const alice = page.locator('.bot[data-bot="alice"]');
      await expect.poll(() => alice.getAttribute("data-screen")).toBe("starting");
      await expect.poll(() => page.locator('.bot[data-bot="bob"]').getAttribute("data-screen")).toBe("starting");
      await expect.poll(() => alice.locator(".state").textContent()).toBe("starting");
      await expect.poll(() => page.locator("#computer-state").textContent()).toBe("starting");
      await expect
        .poll(() => alice.locator(".note .waited").textContent(), { timeout: 5000 })
        .toMatch(/^Waiting [1-9]/);
      expect(await alice.locator(".note strong").textContent()).toBe("Starting alice…");
      expect(await alice.locator('button[data-op="takeover"]').isDisabled()).toBe(true);

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-starting.png", shot);
      expect(await colourShare(shot, alice.locator(".state"), COLOURS.starting), "the starting badge").toBeGreaterThan(
        0.5,
      );
      expect(await colourShare(shot, page.locator("#computer-state"), COLOURS.starting)).toBeGreaterThan(0.5);
      expect(
        await colourShare(shot, alice.locator(".note"), COLOURS.noteStarting, 3),
        "the starting note",
      ).toBeGreaterThan(0.7);
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it("then shows each bot running with the no-live-screen note, what to do, and no page error", async () => {
      letTheComputerStart();
      const alice = page.locator('.bot[data-bot="alice"]');
      for (const botId of ["alice", "bob"]) {
        const card = page.locator(`.bot[data-bot="${botId}"]`);
        await expect.poll(() => card.getAttribute("data-screen"), { timeout: 30_000 }).toBe("none");
        await expect.poll(() => card.locator(".state").textContent(), { timeout: 30_000 }).toBe("running");
      }
      expect(await alice.locator(".note strong").textContent()).toBe("No live screen on this provider");
      expect(await alice.locator(".note .reason").textContent()).toMatch(/fake desktop has no live screen/);
      expect(await alice.locator(".note code").textContent()).toBe("SANDBOX_PROVIDER=docker npm run console");
      await expect.poll(() => page.locator("#computer-state").textContent()).toBe("running");
      expect(await page.locator("#provider").textContent()).toContain("SANDBOX_PROVIDER=fake");
      // The API says the same: an entry per bot, no 500.
      const screens = await (await fetch(new URL("/api/screens", web.url))).json();
      expect(screens).toEqual([
        expect.objectContaining({ botId: "alice", live: false, code: "UNSUPPORTED" }),
        expect.objectContaining({ botId: "bob", live: false, code: "UNSUPPORTED" }),
      ]);
      await expect.poll(() => page.locator("#feed li").count(), { timeout: 10_000 }).toBeGreaterThan(0);
      expect(await page.locator("#feed-empty").isHidden()).toBe(true);

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-fake.png", shot);
      for (const botId of ["alice", "bob"]) {
        const card = page.locator(`.bot[data-bot="${botId}"]`);
        expect(await colourShare(shot, card.locator(".state"), COLOURS.running), `${botId}'s badge`).toBeGreaterThan(
          0.5,
        );
        expect(await colourShare(shot, card.locator(".note"), COLOURS.noteEmpty, 3), `${botId}'s note`).toBeGreaterThan(
          0.7,
        );
      }
      expect(pageErrors).toEqual([]);
    }, 60_000);

    it("refuses Take control while the bot runs in place, then gives the Files window once it stopped", async () => {
      const alice = page.locator('.bot[data-bot="alice"]');
      await alice.locator('button[data-op="takeover"]').click();
      await expect.poll(() => alice.locator(".message .code").textContent()).toBe("BOT_BUSY");
      expect(await alice.locator(".message .text").textContent()).toMatch(/^Stop the bot first/);
      expect(await page.locator("#control").isHidden()).toBe(true);

      await alice.locator('button[data-op="stop"]').click();
      await expect.poll(() => alice.locator(".state").textContent(), { timeout: 30_000 }).toBe("idle");
      // While the takeover is in flight: progress on its button, the card's other buttons disabled.
      let answerTakeover = () => {};
      const takeoverHeld = new Promise<void>((resolve) => {
        answerTakeover = resolve;
      });
      await page.route("**/api/takeover/alice", async (route) => {
        await takeoverHeld;
        await route.continue();
      });
      const takeover = alice.locator('button[data-op="takeover"]');
      await takeover.click();
      await expect.poll(() => takeover.textContent()).toBe("Taking control…");
      expect(await takeover.getAttribute("aria-busy")).toBe("true");
      expect(await alice.locator('button[data-op="start"]').isDisabled()).toBe(true);
      answerTakeover();
      await expect.poll(() => alice.locator(".state").textContent()).toBe("controlled by you");
      const control = page.locator("#control");
      await expect.poll(() => control.isVisible()).toBe(true);
      expect(await control.locator('[data-part="screen"] .badge').textContent()).toBe("not available");
      expect(await control.locator('[data-part="terminal"] .badge').textContent()).toBe("not available");
      await page.frameLocator("#files").locator('li[data-path="bots/alice/work.log"]').waitFor({ timeout: 15_000 });
      await expect.poll(() => control.locator('[data-part="files"] .badge').textContent()).toBe("connected");
      // A reloaded page opens the panel of the bot you control again.
      await page.reload();
      await expect.poll(() => alice.locator(".state").textContent()).toBe("controlled by you");
      // The feed starts with the recent lines, the takeover among them.
      await expect
        .poll(() => page.locator("#feed li").allTextContents())
        .toEqual(expect.arrayContaining([expect.stringMatching(/alicea person took control$/)]));
      await expect.poll(() => control.isVisible()).toBe(true);
      await page.frameLocator("#files").locator('li[data-path="bots/alice/work.log"]').waitFor({ timeout: 15_000 });
      await expect.poll(() => control.locator('[data-part="files"] .badge').textContent()).toBe("connected");

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-fake-controlled.png", shot);
      expect(
        await colourShare(shot, alice.locator(".state"), COLOURS.controlled),
        "the controlled badge",
      ).toBeGreaterThan(0.5);

      await control.locator("#control-release").click();
      await expect.poll(() => alice.locator(".state").textContent()).toBe("idle");
      expect(await control.isHidden()).toBe(true);
      // The refusal asked for is the only failed request the page saw.
      expect(pageErrors.join("; ")).toBe("409 POST /api/takeover/alice");
    }, 60_000);
  });
}
