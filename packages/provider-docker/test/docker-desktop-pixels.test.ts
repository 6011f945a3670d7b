import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { pixelsOf, SITE, serveFixtureSite, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// What a bot sees and does on a real desktop: pixels that follow the page,
// typing that reaches the DOM, and hostile actions that get typed errors.
const env = await dockerTestEnvironment("docker desktops: observe and act");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  let machine: Machine;
  let desktop: LinuxDesktopSession;

  describe("docker desktops: observe and act", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "pixels", homeKey: `pixels-${Date.now()}` });
      await serveFixtureSite(machine);
      desktop = (await machine.openDesktop?.("pixel-bot", undefined, {
        screen: { width: 1024, height: 768 },
      })) as LinuxDesktopSession;
    }, 120_000);
    afterAll(async () => {
      await desktop?.release().catch(() => {});
      await machine?.destroy();
    });

    it("returns a PNG whose pixels change after a click that changes the page", async () => {
      await desktop.evaluateInPage(undefined, undefined, { url: `${SITE}/click.html` });
      // Park the pointer first, so the click below changes nothing but the page.
      expect((await desktop.act([{ type: "move", x: 500, y: 500 }])).ok).toBe(true);
      const before = await desktop.observe();
      expect(before).toMatchObject({ width: 1024, height: 768, cursor: { x: 500, y: 500 } });
      expect(before.windowTitle).toMatch(/^Click me/);
      const outcome = await desktop.act([{ type: "click" }, { type: "wait", ms: 300 }]);
      expect(outcome.results.map((r) => r.status)).toEqual(["done", "done"]);
      const after = await desktop.observe();
      expect(after.frameHash).not.toBe(before.frameHash);
      const [b, a] = [pixelsOf(before.image as Uint8Array), pixelsOf(after.image as Uint8Array)];
      expect([a.width, a.height]).toEqual([1024, 768]);
      expect(b.at(200, 600)).toEqual([255, 255, 255]);
      expect(a.at(200, 600)).toEqual([200, 30, 30]);
      // Nothing moves on an idle desktop: the same look twice is the same frame.
      expect((await desktop.observe(undefined, { includeImage: false })).frameHash).toBe(after.frameHash);
    }, 60_000);

    it("gives a region and a scaled-down image on request", async () => {
      const region = await desktop.observe(undefined, { region: { x: 100, y: 400, width: 300, height: 200 } });
      expect(region.imageSize).toEqual({ width: 300, height: 200 });
      expect(pixelsOf(region.image as Uint8Array).at(10, 10)).toEqual([200, 30, 30]);
      const small = await desktop.observe(undefined, { maxWidth: 512 });
      expect(small.imageSize).toEqual({ width: 512, height: 384 });
      expect(small).toMatchObject({ width: 1024, height: 768 });
      const zoom = await desktop.act([{ type: "zoom", region: { x: 0, y: 300, width: 64, height: 32 } }]);
      expect(pixelsOf(zoom.results[0]?.image as Uint8Array).width).toBe(64);
    }, 60_000);

    it("types into a page field, visible in the DOM read back through DevTools", async () => {
      await desktop.evaluateInPage(undefined, undefined, { url: `${SITE}/form.html` });
      // Chromium drops input that reaches a page before its first frame is
      // drawn; on a loaded machine that frame can come well after load (the
      // field stayed empty with tests running side by side). A bot looks
      // before it acts; here two animation frames say the page is drawn.
      await desktop.evaluateInPage(
        "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))",
      );
      const text = "Hello from the bot: 123 äöü";
      const outcome = await desktop.act([
        { type: "click", x: 300, y: 400 },
        { type: "type", text },
        { type: "key", keys: "shift+Home" },
        { type: "key", keys: "ctrl+c" },
        { type: "key", keys: "End" },
        { type: "key", keys: "ctrl+v" },
      ]);
      expect(outcome.ok).toBe(true);
      // act returns once X has the events; the page takes them a moment later, on its own clock.
      await expect
        .poll(() => desktop.evaluateInPage("document.getElementById('field').value"), { timeout: 5_000 })
        .toBe(text + text);
    }, 60_000);

    it("refuses hostile actions with typed errors, and the desktop still works", async () => {
      // Bad input never reaches the computer.
      await expect(desktop.act([{ type: "type", text: "x".repeat(1024 * 1024) }])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      await expect(desktop.act([{ type: "wait", ms: -5 }])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(desktop.act([{ type: "move", x: -1, y: 3 }])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(desktop.observe(undefined, { region: { x: 0, y: 0, width: 0, height: 1 } })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });

      // Input the schema allows but this screen or X does not: the batch stops there, certainly not applied.
      const offScreen = await desktop.act([
        { type: "move", x: 10, y: 10 },
        { type: "click", x: 5000, y: 5000 },
        { type: "move", x: 20, y: 20 },
      ]);
      expect(offScreen.ok).toBe(false);
      expect(offScreen.results.map((r) => r.status)).toEqual(["done", "failed", "not-run"]);
      expect(offScreen.results[1]).toMatchObject({ uncertain: false, error: { code: "INVALID_ARGUMENT" } });
      const keys = await desktop.act([{ type: "key", keys: "ctrl+NoSuchKeyName" }]);
      expect(keys.results[0]).toMatchObject({
        status: "failed",
        uncertain: false,
        error: { code: "INVALID_ARGUMENT" },
      });
      const held = await desktop.act([{ type: "key_down", key: "Hyper_Q" }]);
      expect(held.results[0]).toMatchObject({ status: "failed", error: { code: "INVALID_ARGUMENT" } });
      await expect(
        desktop.observe(undefined, { region: { x: 1000, y: 700, width: 100, height: 100 } }),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(desktop.evaluateInPage("throw new Error('boom')")).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });

      // Still alive: the pointer moves and the frame follows.
      const still = await desktop.observe();
      expect(still.cursor).toEqual({ x: 10, y: 10 });
      expect((await desktop.act([{ type: "move", x: 40, y: 40 }])).ok).toBe(true);
      const moved = await desktop.observe();
      expect(moved.cursor).toEqual({ x: 40, y: 40 });
      expect(moved.frameHash).not.toBe(still.frameHash);
    }, 60_000);

    it("refuses proxy credentials it cannot carry (socks) without echoing them, and bad bot ids", async () => {
      const secret = "hunter2-secret";
      const error = await machine
        .openDesktop?.("proxy-bot", undefined, {
          proxy: { server: "socks5://proxy.invalid:1080", username: "u", password: secret },
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "UNSUPPORTED" });
      expect(JSON.stringify(error)).not.toContain(secret);
      expect(String((error as Error).message)).not.toContain(secret);
      await expect(machine.openDesktop?.("../escape")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }, 30_000);
  });
}
