import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { definePageBrowserConformance, PAGE_FIXTURES } from "@agent-computer/testing/conformance";
import { afterAll, beforeAll, describe } from "vitest";
import { EmulatorPageBrowser } from "./emulator-page-browser.js";

// The emulator against real loopback HTTP pages: the same cases the bot's
// Chromium passes in provider-docker's page-browser test.
let server: Server;
let base = "";
const browsers: EmulatorPageBrowser[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const html = PAGE_FIXTURES[(req.url ?? "/").slice(1).split("?")[0] ?? ""];
    res.writeHead(html ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
    res.end(html ?? "Not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all(browsers.map((b) => b.close()));
  await new Promise((resolve) => server.close(resolve));
});

describe("emulator page browser", () => {
  definePageBrowserConformance({
    browser: async () => {
      const browser = new EmulatorPageBrowser();
      browsers.push(browser);
      return browser;
    },
    urlOf: (name) => `${base}/${name}`,
  });
});
