import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InMemorySnapshotMemory, PageSession } from "@agent-computer/page-browser";
import { definePageBrowserConformance, PAGE_FIXTURES } from "@agent-computer/testing/conformance";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, it } from "vitest";
import type { CdpConnection } from "../computer/desktop/cdp-connection.js";
import { CdpPageEngine } from "../computer/desktop/cdp-page-engine.js";

// The in-computer engine (the page script in an isolated world, trusted CDP
// input) against real Chromium on this host, with the same conformance
// cases the emulator passes; provider-docker's test runs it in the computer.
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

if (!existsSync(CHROMIUM)) {
  const missing = `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`;
  if (process.env.CI)
    it("the CDP page browser needs Chromium", () => {
      throw new Error(`CI is set and ${missing}`);
    });
  else describe.skip(`the CDP page browser (skipped: ${missing})`, () => it("needs Chromium", () => {}));
} else {
  let server: Server;
  let base = "";
  let browser: Browser;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const html = PAGE_FIXTURES[(req.url ?? "/").slice(1).split("?")[0] ?? ""];
      res.writeHead(html ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
      res.end(html ?? "Not found");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server.close(resolve));
  });

  describe("CDP page browser in real Chromium", () => {
    definePageBrowserConformance({
      layout: true,
      browser: async () => {
        const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
        const session = await page.context().newCDPSession(page);
        // CdpPageEngine only calls `call(method, params)`: Playwright's CDP session carries it.
        const cdp = {
          call: (method: string, params: Record<string, unknown> = {}) =>
            session.send(method as Parameters<typeof session.send>[0], params as never),
        } as unknown as CdpConnection;
        return new PageSession(new CdpPageEngine(cdp), new InMemorySnapshotMemory<number>());
      },
      urlOf: (name) => `${base}/${name}`,
    });
  });
}
