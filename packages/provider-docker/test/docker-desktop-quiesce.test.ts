import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { SITE, serveFixtureSite, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// A cookie a page sets just before an export survives quiesce, export,
// destroy and import into a new computer: the browser wrote it to disk.
const env = await dockerTestEnvironment("docker desktops: quiesce for export");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  const machines: Machine[] = [];
  afterAll(async () => {
    for (const m of machines) await m.destroy().catch(() => {});
  });

  describe("docker desktops: quiesce for export", () => {
    it("keeps a just-set cookie through export, destroy and import into a new computer", async () => {
      const run = Date.now();
      const first = await provider.provision({ computerId: "quiesce-a", homeKey: `quiesce-a-${run}` });
      machines.push(first);
      await serveFixtureSite(first);
      const desktop = (await first.openDesktop?.("erin")) as LinuxDesktopSession;
      await desktop.evaluateInPage(undefined, undefined, { url: `${SITE}/login.html?user=erin` });
      const value = randomBytes(6).toString("hex");
      // Set a cookie through the desktop and export at once: without a
      // quiesce, Chromium would still hold it in memory (it flushes cookies lazily).
      const set = await desktop.act([
        { type: "key", keys: "ctrl+l" },
        { type: "type", text: `${SITE}/late.html?v=${value}\n` },
        { type: "wait", ms: 700 },
      ]);
      expect(set.ok).toBe(true);
      expect(await desktop.evaluateInPage("document.cookie")).toContain(`late=${value}`);

      const resume = await first.quiesceDesktops?.();
      expect(resume).toBeTypeOf("function");
      const chunks: Buffer[] = [];
      for await (const chunk of await first.files.exportWorkspace()) chunks.push(chunk as Buffer);
      await resume?.();
      // Resumed: the same display, its browser back with the tab it had.
      expect(await desktop.evaluateInPage("location.pathname")).toBe("/late.html");
      await first.destroy();

      const second = await provider.provision({ computerId: "quiesce-b", homeKey: `quiesce-b-${run}` });
      machines.push(second);
      await second.stop();
      await second.files.importWorkspace(Readable.from([Buffer.concat(chunks)]));
      const again = await provider.reconnect(second.ref);
      if (again === "gone") throw new Error("the stopped computer was gone");
      await serveFixtureSite(again);
      const restored = (await again.openDesktop?.("erin")) as LinuxDesktopSession;
      const cookie = await restored.evaluateInPage("document.cookie", undefined, { url: `${SITE}/whoami.html` });
      expect(cookie).toContain(`late=${value}`);
      expect(cookie).toContain("session=erin");
      await restored.release();
    }, 240_000);
  });
}
