import {
  AgentComputerError,
  createComputerRuntime,
  LocalAgentHomeStore,
  MemoryStateStore,
} from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { type Browser, chromium } from "playwright-core";
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
  saveShot,
  watchForPageErrors,
} from "./console-browser.js";

// A computer that cannot start, in real headless Chromium: the bot's card
// turns failed with the provider's reason in place, its screen shows the
// error with a Retry, and once the provider works again Start bot and
// Retry bring the card back. The fake provider, refusing on purpose, with
// its live screens off (a provider without a gateway), so Retry settles on
// the no-live-screen note.

if (missingChromium)
  reportMissingProvider("the web console when the computer cannot start", {
    kind: "Chromium",
    missing: missingChromium,
  });
else {
  describe("the web console when the computer cannot start", () => {
    let refusing = true;
    let browser: Browser;
    let web: Awaited<ReturnType<typeof startWebConsole>>;
    const bots: ScriptedBot[] = [];

    // Chromium's first start on a busy machine is slow: it is not part of what the test times.
    beforeAll(async () => {
      const dataDir = await temporaryDataDir();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const runtime = createComputerRuntime({
        provider: gatedProvider(createFakeProvider({ liveScreens: false }), async () => {
          if (refusing)
            throw new AgentComputerError("UNAVAILABLE", "The provider refused a new machine: quota used up.");
        }),
        stateStore: new MemoryStateStore(),
        homeStore,
        idleMs: 0,
      });
      const workspaceId = `console-failure-${Date.now().toString(36)}`;
      web = await startWebConsole({ runtime, homeStore, workspaceId, bots });
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      bots.push(
        new ScriptedBot("alice", { runtime, workspaceId, onActivity: web.onActivity, colour: `rgb(${BLUE})`, port }),
      );
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    }, 60_000);

    afterAll(async () => {
      for (const bot of bots) await bot.stop().catch(() => undefined);
      await browser?.close();
      await web?.close();
    });

    it("shows the failed start and the screen's error in place, and recovers with Start bot and Retry", async () => {
      await bots[0]?.start().catch(() => undefined);
      const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
      const pageErrors = watchForPageErrors(page);
      await page.goto(web.url);
      const alice = page.locator('.bot[data-bot="alice"]');
      await expect.poll(() => alice.locator(".state").textContent()).toBe("failed");
      await expect.poll(() => alice.getAttribute("data-screen")).toBe("error");
      expect(await alice.locator(".message .code").textContent()).toBe("UNAVAILABLE");
      expect(await alice.locator(".message .text").textContent()).toBe(
        "alice could not start: The provider refused a new machine: quota used up.",
      );
      expect(await page.locator("#computer-state").textContent()).toBe("not started");
      expect(await alice.locator(".note strong").textContent()).toBe("The screen could not be opened");
      expect(await alice.locator('.note button[data-op="retry"]').isVisible()).toBe(true);
      expect(await alice.locator('button[data-op="start"]').isVisible()).toBe(true);

      const shot = await page.screenshot({ fullPage: true });
      await saveShot("web-console-failed.png", shot);
      expect(await colourShare(shot, alice.locator(".state"), COLOURS.error), "the failed badge").toBeGreaterThan(0.5);
      expect(await colourShare(shot, alice.locator(".message .code"), COLOURS.error), "the code").toBeGreaterThan(0.5);
      expect(
        await colourShare(shot, alice.locator(".note"), COLOURS.noteError, 3),
        "the screen's note",
      ).toBeGreaterThan(0.7);
      // The console's API answered every request; only the screen's own entry says what failed.
      expect(pageErrors).toEqual([]);

      refusing = false;
      await alice.locator('button[data-op="start"]').click();
      await expect.poll(() => alice.locator(".state").textContent(), { timeout: 30_000 }).toBe("running");
      expect(await alice.locator(".message").textContent()).toBe("");
      await alice.locator('.note button[data-op="retry"]').click();
      await expect.poll(() => alice.getAttribute("data-screen"), { timeout: 30_000 }).toBe("none");
      expect(pageErrors).toEqual([]);
    }, 60_000);
  });
}
