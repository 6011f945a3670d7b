import { existsSync } from "node:fs";
import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { eventually, type Harness, LeakWatch, startHarness } from "./harness.js";

// The terminal page in real headless Chromium (its CSP, xterm's UMD build
// and the fit addon as served), through the proxy to the fake gateway's
// echoing shell. The end-to-end suite does the same against a real
// computer's gateway and shell.
const CHROMIUM = "/usr/bin/chromium";

/** What the terminal page has, in the page (this package's types have no DOM). */
interface InPage {
  document: { documentElement: { dataset: Record<string, string | undefined> } };
  terminalText(options?: { all: boolean }): string;
}
// Functions, not strings: the page's CSP refuses eval, which string predicates need.
const stateIs = (want: string) => (globalThis as unknown as InPage).document.documentElement.dataset.state === want;
const hasText = ([text, all]: [string, boolean]) =>
  (globalThis as unknown as InPage).terminalText(all ? { all } : undefined).includes(text);

/** An app's page embedding the terminal, collecting its state messages in `window.states`; the terminal's frame. */
async function embedTerminal(page: Page, h: Harness, terminalUrl: string): Promise<Frame> {
  await page.route(h.url("/app"), (route) =>
    route.fulfill({
      contentType: "text/html",
      body: `<script>window.states=[];addEventListener("message",(e)=>{if(e.data&&e.data.type==="agent-computer-terminal")states.push(e.data.state)})</script><iframe src="${terminalUrl}" style="width:780px;height:460px"></iframe>`,
    }),
  );
  await page.goto(h.url("/app"));
  return eventually(() => page.frames().find((f) => f.url().includes("/screens/terminal")));
}

if (!existsSync(CHROMIUM)) {
  const missing = `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`;
  if (process.env.CI)
    it("the terminal page in a real browser needs Chromium", () => {
      throw new Error(`CI is set and ${missing}`);
    });
  else describe.skip(`the terminal page in a real browser (skipped: ${missing})`, () => it("needs Chromium", () => {}));
} else {
  describe("the terminal page in a real browser", () => {
    let browser: Browser | undefined;
    afterAll(async () => {
      await browser?.close();
    });

    it("connects, types, fits and resizes, reports its states, and ends on revoke", async () => {
      const watch = new LeakWatch();
      const h = await startHarness(watch);
      try {
        const leases = new LeaseEngine(new MemoryStateStore());
        const control = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "p", ttlMs: 60_000 });
        const capability = watch.terminal(
          await h.screens.issueTerminalCapability({ computerId: "team-1", botId: "bot-1", ttlMs: 60_000, control }),
        );
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
        const page = await browser.newPage({ viewport: { width: 800, height: 480 } });
        const problems: string[] = [];
        page.on("pageerror", (error) => problems.push(error.message));
        page.on("console", (message) => {
          if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
        });
        const frame = await embedTerminal(page, h, capability.terminalUrl);
        await frame.waitForFunction(stateIs, "connected");
        await frame.waitForFunction(hasText, ["fake-shell$", false] as [string, boolean]);
        const upstream = h.gateway.connections.at(-1)!;
        await eventually(() => upstream.frames.length > 0);
        const first = JSON.parse(upstream.frames[0]!.data.toString()) as { type: string; cols: number; rows: number };
        expect(upstream.frames[0]!.binary).toBe(false);
        expect(first.type).toBe("resize");
        expect(first.cols).toBeGreaterThan(40);

        await frame.click("#terminal");
        await page.keyboard.type("echo ünï");
        await frame.waitForFunction(hasText, ["echo ünï", false] as [string, boolean]);
        const typed = Buffer.concat(upstream.frames.filter((f) => f.binary).map((f) => f.data));
        expect(typed.toString("utf8")).toBe("echo ünï");

        await page.setViewportSize({ width: 400, height: 300 });
        await page.evaluate('document.querySelector("iframe").style.width = "380px"');
        await eventually(() => upstream.frames.filter((f) => !f.binary).length >= 2);
        const last = JSON.parse(
          upstream.frames
            .filter((f) => !f.binary)
            .at(-1)!
            .data.toString(),
        ) as { cols: number };
        expect(last.cols).toBeLessThan(first.cols);
        await frame.waitForFunction(hasText, ["resized", true] as [string, boolean]);

        await h.screens.revoke(capability.id);
        await frame.waitForFunction(stateIs, "disconnected");
        expect(await page.evaluate("window.states")).toEqual(["connecting", "connected", "disconnected"]);
        expect(problems).toEqual([]);
      } finally {
        await h.stop();
      }
    });

    it("reconnects by itself to a new shell when the gateway's connection drops; a revoke still ends it", async () => {
      const watch = new LeakWatch();
      const h = await startHarness(watch);
      try {
        const leases = new LeaseEngine(new MemoryStateStore());
        const control = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "p", ttlMs: 60_000 });
        const capability = watch.terminal(
          await h.screens.issueTerminalCapability({ computerId: "team-1", botId: "bot-1", ttlMs: 60_000, control }),
        );
        browser ??= await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
        const page = await browser.newPage({ viewport: { width: 800, height: 480 } });
        const frame = await embedTerminal(page, h, capability.terminalUrl);
        await frame.waitForFunction(stateIs, "connected");
        const first = h.gateway.connections.at(-1)!;
        // The gateway's side drops without a close frame: the proxy closes the page's socket with 1011.
        first.socket.terminate();
        await eventually(() => (h.gateway.connections.at(-1) !== first ? true : undefined));
        await frame.waitForFunction(stateIs, "connected");
        await frame.waitForFunction(hasText, ["[reconnected: a new shell]", true] as [string, boolean]);
        await frame.click("#terminal");
        await page.keyboard.type("after");
        await frame.waitForFunction(hasText, ["after", false] as [string, boolean]);
        expect(
          Buffer.concat(
            h.gateway.connections
              .at(-1)!
              .frames.filter((f) => f.binary)
              .map((f) => f.data),
          ).toString(),
        ).toBe("after");
        await h.screens.revoke(capability.id);
        await frame.waitForFunction(stateIs, "disconnected");
        expect(await page.evaluate("window.states")).toEqual([
          "connecting",
          "connected",
          "connecting",
          "connected",
          "disconnected",
        ]);
      } finally {
        await h.stop();
      }
    });
  });
}
