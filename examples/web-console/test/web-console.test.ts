import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime, LocalAgentHomeStore, MemoryStateStore } from "@agent-computer/runtime";
import {
  chooseTestProvider,
  pixelsOf,
  reportMissingProvider,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { ScriptedBot } from "../src/scripted-bot.js";
import { startWebConsole } from "../src/web-console.js";

// The console as a person uses it, in real headless Chromium against two
// scripted bots on a real Docker computer: both screens live, a takeover
// refused while the bot runs and accepted once it stopped, the terminal,
// an upload through the Files window, and the feed moving.
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];
const BLUE = [20, 120, 220];
const ORANGE = [230, 120, 20];
const OUT = join(import.meta.dirname, "..", "..", "..", "out");

const env = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
const missing =
  env.missing ?? (existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`);

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
  describe("the web console in a real browser", () => {
    let browser: Browser | undefined;
    afterAll(async () => {
      await browser?.close();
    });

    it("shows two bots' screens, refuses a takeover while the bot runs, then gives its terminal and files", async () => {
      const dataDir = await temporaryDataDir();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const runtime = createComputerRuntime({
        provider: dockerProvider({ docker: env.docker, image: env.image, dataDir }),
        stateStore: new MemoryStateStore(),
        homeStore,
        idleMs: 0,
      });
      const workspaceId = `console-${Date.now().toString(36)}`;
      const bots: ScriptedBot[] = [];
      const web = await startWebConsole({ runtime, homeStore, workspaceId, bots });
      const options = { runtime, workspaceId, onActivity: web.onActivity };
      bots.push(
        new ScriptedBot("alice", { ...options, colour: `rgb(${BLUE})`, port: 8801 }),
        new ScriptedBot("bob", { ...options, colour: `rgb(${ORANGE})`, port: 8802 }),
      );
      try {
        for (const bot of bots) await bot.start();
        browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
        const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
        await page.goto(web.url);

        // Both screens live, each showing its bot's page.
        await expect.poll(() => centreOf(page, "#screen-alice"), { timeout: 30_000 }).toSatisfy(near(BLUE));
        await expect.poll(() => centreOf(page, "#screen-bob"), { timeout: 30_000 }).toSatisfy(near(ORANGE));
        await expect.poll(() => page.locator('.bot[data-bot="alice"] .state').textContent()).toBe("running");

        // Refused while alice runs, with the rule in words.
        const alice = page.locator('.bot[data-bot="alice"]');
        await alice.locator('button[data-op="takeover"]').click();
        await expect.poll(() => alice.locator(".message").textContent()).toMatch(/^BOT_BUSY: Stop the bot first/);
        expect(await page.locator("#control").isHidden()).toBe(true);

        // Stopped, then accepted: control screen, terminal and Files window for alice.
        await alice.locator('button[data-op="stop"]').click();
        await expect.poll(() => alice.locator(".state").textContent(), { timeout: 30_000 }).toBe("idle");
        await alice.locator('button[data-op="takeover"]').click();
        await page.locator("#control #terminal").waitFor();
        await expect.poll(() => alice.locator(".state").textContent()).toBe("controlled by you");

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
            expect.arrayContaining([expect.stringMatching(/alice: uploaded bots\/alice\/brief.txt \(22 bytes\)/)]),
          );
        const seen = await feed.count();
        await expect.poll(() => feed.count(), { timeout: 10_000 }).toBeGreaterThan(seen);
        expect((await feed.allTextContents()).some((t) => /bob: echo "step \d+/.test(t))).toBe(true);

        // The page as a person sees it, and its screens are not blank.
        await expect.poll(() => centreOf(page, "#screen-alice"), { timeout: 30_000 }).toSatisfy(near(BLUE));
        await expect.poll(() => centreOf(page, "#screen-bob"), { timeout: 30_000 }).toSatisfy(near(ORANGE));
        await mkdir(OUT, { recursive: true });
        const shot = await page.screenshot({ fullPage: false });
        await writeFile(join(OUT, "web-console.png"), shot);
        const pixels = pixelsOf(shot);
        for (const [bot, colour] of [
          ["alice", BLUE],
          ["bob", ORANGE],
        ] as const) {
          const box = await page.locator(`#screen-${bot}`).boundingBox();
          if (!box) throw new Error(`no screen for ${bot}`);
          let matching = 0;
          let samples = 0;
          for (let y = box.y + 10; y < box.y + box.height - 10; y += 10)
            for (let x = box.x + 10; x < box.x + box.width - 10; x += 10) {
              samples++;
              if (near(colour)(pixels.at(Math.round(x), Math.round(y)))) matching++;
            }
          expect(matching / samples, `${bot}'s screen`).toBeGreaterThan(0.3);
        }

        await page.locator('.bot[data-bot="alice"] button[data-op="release"]').click();
        await expect.poll(() => alice.locator(".state").textContent()).toBe("idle");
      } finally {
        for (const bot of bots) if (bot.state === "running") await bot.stop().catch(() => undefined);
        await web.close();
        const record = await runtime.leases.getComputer(web.computerId);
        await runtime.deleteComputer(web.computerId).catch(() => {});
        const id = record?.providerRef?.slice("docker:".length);
        if (id)
          await env.docker
            .getContainer(id)
            .remove({ force: true })
            .catch(() => {});
      }
    }, 300_000);
  });
}
